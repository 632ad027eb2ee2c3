package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// cliExecEnv, set in a child's environment, makes the test binary run
// the command line instead of the tests: the CLI's tests run it as a
// separate process without building another binary.
const cliExecEnv = "PACKFS_TEST_RUN_CLI"

func init() {
	if os.Getenv(cliExecEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
	}
}

// childCommand returns the command line args as a child process.
func childCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), cliExecEnv+"=1")
	return cmd
}

// childResult is what a child process of the CLI did.
type childResult struct {
	code           int
	stdout, stderr string
}

// runChild runs the command line args in a child process and waits for it.
func runChild(t *testing.T, args ...string) childResult {
	t.Helper()
	cmd := childCommand(t, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := childResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// runChildWant runs args and fails the test unless the exit status is code.
func runChildWant(t *testing.T, code int, args ...string) childResult {
	t.Helper()
	r := runChild(t, args...)
	if r.code != code {
		t.Fatalf("packfs %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}
