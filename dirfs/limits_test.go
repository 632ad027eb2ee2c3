package dirfs_test

import (
	"testing"

	"github.com/packfs/packfs/conformance"
	"github.com/packfs/packfs/layer"
)

// eachMode runs test on fresh FSes of both ways of resolving names.
func eachMode(t *testing.T, test func(t *testing.T, newFS conformance.NewFS)) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			test(t, func(t *testing.T) layer.FS { return newFS(t, m.opts...) })
		})
	}
}

// TestIssue13SymlinkEmptyTargetDirfs is issue 13, item 3: the empty target
// is ENOENT before newname's parent is resolved (it was ENOTDIR or ELOOP).
func TestIssue13SymlinkEmptyTargetDirfs(t *testing.T) {
	eachMode(t, func(t *testing.T, newFS conformance.NewFS) {
		conformance.Tests["SymlinkEmptyTarget"](t, newFS)
	})
}

// TestIssue14NameLimitsDirfs is issue 14, item 6: a path of 4,096 bytes
// or more is ENAMETOOLONG before any element is looked up, as the kernel
// does (the parent resolved apart, or os.Root, found ENOENT first).
func TestIssue14NameLimitsDirfs(t *testing.T) {
	eachMode(t, func(t *testing.T, newFS conformance.NewFS) {
		conformance.Tests["NameLimits"](t, newFS)
	})
}

// TestIssue13SetgidMkdirDirfs is issue 13, item 2, on the host: the
// os.Root fallback refused a perm with the sticky or setgid bit.
func TestIssue13SetgidMkdirDirfs(t *testing.T) {
	eachMode(t, func(t *testing.T, newFS conformance.NewFS) {
		conformance.Tests["SetgidMkdir"](t, newFS)
	})
}
