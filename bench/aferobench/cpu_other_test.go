//go:build !unix

package aferobench

import "testing"

type cpuClock struct{}

func startCPU() cpuClock                        { return cpuClock{} }
func (cpuClock) report(*testing.B, int, string) {}
