//go:build dirfs_forceroot

package dirfs

// forceRootTag makes every FS use the os.Root fallback, so that a whole test
// run exercises it.
const forceRootTag = true
