//go:build !dirfs_forceroot

package dirfs

const forceRootTag = false
