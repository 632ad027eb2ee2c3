//go:build unix

package aferoadapter_test

import "syscall"

// clearUmask sets the umask to 0, so that the OS keeps the modes it is
// given, as the in-memory layer does.
func clearUmask() { syscall.Umask(0) }
