package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The file fills what the command line did not set; the command line wins.
func TestConfigFilePrecedence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runnel.toml")
	if err := os.WriteFile(path, []byte("listen = \"127.0.0.1:9999\"\ndata_dir = \"/from/file\"\nbarrier_interval = \"250ms\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	listen := fs.String("listen", "127.0.0.1:4566", "")
	dataDir := fs.String("data-dir", "runnel-data", "")
	interval := fs.Duration("barrier-interval", 0, "")
	if err := fs.Parse([]string{"--data-dir", "/from/flag"}); err != nil {
		t.Fatal(err)
	}
	if err := applyConfigFile(fs, path, nil); err != nil {
		t.Fatal(err)
	}
	if *listen != "127.0.0.1:9999" || *dataDir != "/from/flag" || interval.String() != "250ms" {
		t.Fatalf("listen=%s data-dir=%s interval=%s", *listen, *dataDir, interval)
	}
}

func TestConfigFileRejectsUnknownSettings(t *testing.T) {
	path := filepath.Join(t.TempDir(), "runnel.toml")
	if err := os.WriteFile(path, []byte("lissten = \"x\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.String("listen", "", "")
	err := applyConfigFile(fs, path, nil)
	if err == nil || !strings.Contains(err.Error(), "lissten") {
		t.Fatalf("err = %v; want an error naming the unknown setting", err)
	}
}
