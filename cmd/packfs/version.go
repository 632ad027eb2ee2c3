package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

func cmdVersion(_ *flag.FlagSet, _ []string, stdout, _ io.Writer) error {
	_, err := fmt.Fprintln(stdout, version())
	return err
}

// version describes the binary from its build information: the module
// version (v1.2.3 from go install …@v1.2.3, "(devel)" from a checkout),
// the VCS revision and time the go command stamped, and the toolchain.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Sprintf("packfs unknown version %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var vcs []string
	var rev, when string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		vcs = append(vcs, "revision "+rev[:min(len(rev), 12)])
	}
	if when != "" {
		vcs = append(vcs, when)
	}
	if modified {
		vcs = append(vcs, "modified")
	}
	out := "packfs " + v
	if len(vcs) > 0 {
		out += " (" + strings.Join(vcs, ", ") + ")"
	}
	return fmt.Sprintf("%s %s %s/%s", out, bi.GoVersion, runtime.GOOS, runtime.GOARCH)
}
