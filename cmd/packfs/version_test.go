package main

import (
	"runtime"
	"strings"
	"testing"
)

// TestIssue15Version: --version and the version command print the same
// line, from the binary's build information.
func TestIssue15Version(t *testing.T) {
	a := runChildWant(t, 0, "--version")
	b := runChildWant(t, 0, "version")
	if a.stdout != b.stdout || a.stderr != "" || b.stderr != "" {
		t.Fatalf("--version %q (stderr %q), version %q (stderr %q)", a.stdout, a.stderr, b.stdout, b.stderr)
	}
	if !strings.HasPrefix(a.stdout, "packfs ") || !strings.Contains(a.stdout, runtime.Version()) || strings.Count(a.stdout, "\n") != 1 {
		t.Fatalf("version = %q, want one line naming packfs and %s", a.stdout, runtime.Version())
	}
	if r := runChildWant(t, 0, "version", "--help"); !strings.Contains(r.stdout, "usage: packfs version") {
		t.Fatalf("version --help = %q", r.stdout)
	}
}
