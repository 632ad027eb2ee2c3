package suite

import (
	"bufio"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
)

// Machine describes where the suite ran.
type Machine struct {
	CPU        string
	Cores      int
	GOMAXPROCS int
	GoVersion  string
	OS         string
	Kernel     string
	MemTotal   string
	LoadAvg    string
	// Revision is the commit the runner was built from, with "+changes"
	// when the work tree differed, if the build recorded it.
	Revision string `json:",omitempty"`
}

// machine describes this machine.
func machine() Machine {
	m := Machine{
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		CPU:        procField("/proc/cpuinfo", "model name"),
		MemTotal:   procField("/proc/meminfo", "MemTotal"),
		Kernel:     kernel(),
		Revision:   revision(),
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			m.LoadAvg = strings.Join(f[:3], " ")
		}
	}
	return m
}

// procField returns the value of the first "key: value" line of a /proc
// file, or "".
func procField(file, key string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// revision returns the VCS revision stamped into the binary, or "".
func revision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev != "" && modified == "true" {
		rev += "+changes"
	}
	return rev
}
