//go:build !unix

package aferoadapter_test

func clearUmask() {}
