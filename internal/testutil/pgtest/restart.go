package pgtest

import (
	"fmt"
	"path/filepath"
	"syscall"
	"time"
)

// Crash stops the server the way a machine failure would: an immediate
// shutdown (SIGQUIT to the postmaster: no checkpoint, every backend exits at
// once, the next start replays the WAL). It waits for the postmaster to exit.
// Restart brings the cluster back on the same port and data directory.
func (c *Cluster) Crash() error {
	select {
	case <-c.exited:
		return nil
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGQUIT)
	select {
	case <-c.exited:
		return nil
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return fmt.Errorf("pgtest: postgres pid %d ignored SIGQUIT; killed", c.cmd.Process.Pid)
	}
}

// Restart starts a crashed or stopped cluster again on its port and data
// directory and waits until it accepts connections. Only for clusters from
// StartCluster (a Stop of a temporary cluster removes its directory).
func (c *Cluster) Restart() error {
	select {
	case <-c.exited:
	default:
		return fmt.Errorf("pgtest: restart: postgres pid %d is still running", c.cmd.Process.Pid)
	}
	bin, err := BinDir()
	if err != nil {
		return err
	}
	cred, err := serverCredential()
	if err != nil {
		return err
	}
	// The port was ours a moment ago; after an immediate shutdown the
	// socket may linger briefly, so retry the bind a few times.
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		if lastErr = c.start(bin, filepath.Join(c.Dir, "data"), cred); lastErr == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return lastErr
}
