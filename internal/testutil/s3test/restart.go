package s3test

import (
	"fmt"
	"path/filepath"
	"syscall"
	"time"
)

// Kill ends the server with SIGKILL, as a crash or a network cut would look
// to its clients, and waits for it. The objects it stored stay in Dir;
// Restart serves them again on the same endpoint.
func (s *Server) Kill() {
	select {
	case <-s.exited:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Restart starts a killed server again on its endpoint and directory and
// waits until it answers.
func (s *Server) Restart() error {
	select {
	case <-s.exited:
	default:
		return fmt.Errorf("s3test: restart: versitygw pid %d is still running", s.cmd.Process.Pid)
	}
	bin, err := Binary()
	if err != nil {
		return err
	}
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		if lastErr = s.startOn(bin, filepath.Join(s.Dir, "gw"), s.Endpoint); lastErr == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return lastErr
}

// Pause stops the server's process (SIGSTOP) so that requests hang rather
// than fail, as an overloaded or partitioned S3 endpoint looks; Resume
// continues it.
func (s *Server) Pause() error  { return s.cmd.Process.Signal(syscall.SIGSTOP) }
func (s *Server) Resume() error { return s.cmd.Process.Signal(syscall.SIGCONT) }
