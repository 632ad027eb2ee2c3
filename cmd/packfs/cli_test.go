package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"
)

// The tests run the command as users do, in a process of its own: the test
// binary runs main when this variable is set.
const asCLI = "PACKFS_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// cli runs packfs with args in a child process, in dir, and returns its
// standard output, standard error and exit status.
func cli(t *testing.T, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), asCLI+"=1")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}
