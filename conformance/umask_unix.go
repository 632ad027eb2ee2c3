//go:build unix

package conformance

import "syscall"

func setUmask(mask int) int { return syscall.Umask(mask) }
