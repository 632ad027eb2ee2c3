//go:build !unix

package wal

import "errors"

var errNoMap = errors.New("wal: segment cannot be mapped")

func mmapWindow(int, int64, int) ([]byte, error) { return nil, errNoMap }

func munmapWindow([]byte) {}
