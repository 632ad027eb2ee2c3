package layer_test

import (
	"strings"
	"syscall"
	"testing"

	"github.com/packfs/packfs/layer"
)

// TestIssue14CheckName is issue 14, item 6: the one rule of Linux's name
// limits that every writable layer and the store apply.
func TestIssue14CheckName(t *testing.T) {
	for _, c := range []struct {
		name string
		want error
	}{
		{"a", nil},
		{strings.Repeat("n", 255), nil},
		{"d/" + strings.Repeat("n", 255), nil},
		{strings.Repeat("n", 256), syscall.ENAMETOOLONG},
		{strings.Repeat("n", 256) + "/x", syscall.ENAMETOOLONG},
		{strings.Repeat("d/", 2047) + "d", nil},                   // 4,095 bytes
		{strings.Repeat("d/", 2047) + "dd", syscall.ENAMETOOLONG}, // 4,096
		{"a\x00b", syscall.EINVAL},
		{strings.Repeat("n", 300) + "\x00", syscall.EINVAL}, // NUL first, as os
	} {
		if got := layer.CheckName(c.name); got != c.want {
			t.Errorf("CheckName(%.20q..., %d bytes) = %v, want %v", c.name, len(c.name), got, c.want)
		}
	}
	if err := layer.CheckPath("d/" + strings.Repeat("n", 256)); err != nil {
		t.Errorf("CheckPath looks at elements: %v", err)
	}
	for _, c := range []struct {
		target, newname string
		want            error
	}{
		{"t", "l", nil},
		{"", "l", syscall.ENOENT},
		{"", "a\x00b", syscall.EINVAL},
		{"a\x00b", "l", syscall.EINVAL},
		{strings.Repeat("t", 4095), "l", nil},
		{strings.Repeat("t", 4096), "l", syscall.ENAMETOOLONG},
		{"", strings.Repeat("l", 4096), syscall.ENOENT},
		{"t", strings.Repeat("l", 4096), syscall.ENAMETOOLONG},
	} {
		if got := layer.CheckSymlink(c.target, c.newname); got != c.want {
			t.Errorf("CheckSymlink(%.10q, %.10q) = %v, want %v", c.target, c.newname, got, c.want)
		}
	}
}
