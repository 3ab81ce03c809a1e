package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// buildOperator builds the operator of the working tree, as `make build` would minus the
// code generation.
func buildOperator(ctx context.Context, root, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build -o %s .: %w", out, err)
	}
	return nil
}

// operatorProc is the operator running as its own process, as it runs in a pod: its
// own memory and CPU, and its requests told apart by its user agent.
type operatorProc struct {
	cmd  *exec.Cmd
	done chan error
	log  *os.File
}

func startOperator(binary, kubeconfig, namespace, linstorURL, logPath string, extra []string, cg *memoryCgroup) (*operatorProc, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--linstor-url", linstorURL,
		"--webhooks=false", "--leader-elect=false",
		"--metrics-bind-address=0", "--health-probe-bind-address=0",
	}, extra...)
	name := binary
	if cg != nil {
		name, args = cg.wrap(binary, args)
	}
	cmd := exec.Command(name, args...)
	// The namespace goes by environment: releases before the flag ignore it.
	env := []string{"KUBECONFIG=" + kubeconfig, "OPERATOR_NAMESPACE=" + namespace}
	for _, e := range os.Environ() {
		// An OLM-managed operator's variables would change what it does.
		if len(e) >= 24 && e[:24] == "OPERATOR_CONDITION_NAME=" {
			continue
		}
		env = append(env, e)
	}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Its own process group: Ctrl-C reaches the bench, which stops the operator
		// after the phase it is measuring.
		Setpgid: true,
		// Never outlive the bench, even a killed one.
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, err
	}
	p := &operatorProc{cmd: cmd, done: make(chan error, 1), log: logFile}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

func (p *operatorProc) pid() int { return p.cmd.Process.Pid }

// exited yields the operator's exit when it stops on its own.
func (p *operatorProc) exited() <-chan error { return p.done }

// stop asks the operator to stop (SIGTERM, as the kubelet would) and kills it after 15 s.
func (p *operatorProc) stop() error {
	defer p.log.Close()
	if p.cmd.ProcessState != nil {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return nil // stopped by our signal
		}
		return err
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		return errors.New("the operator did not stop within 15 s of SIGTERM: killed")
	}
}
