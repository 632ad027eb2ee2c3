//go:build !linux

package suite

// FSType names the file system holding dir; off Linux it is not known.
func FSType(dir string) string { return "unknown" }
