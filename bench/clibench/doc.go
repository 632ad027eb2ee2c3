// Package clibench times the packfs command against the archivers users
// compare it with, in the same run: packing the Go distribution's source
// tree ($(go env GOROOT)/src) and extracting it again, with packfs pack
// and unpack, tar (cf/xf) and zip -0 / unzip, the outputs and the
// extracted trees on tmpfs (/dev/shm where it exists), so that the disk
// does not decide.
//
// Each benchmark runs the commands as processes, as a user does; the
// packfs binary is built once from this module's copy of the project.
// A tool missing on the machine (zip, say) skips its sub-benchmark.
//
// Run from bench/ (a few iterations each; the machine is shared):
//
//	go test -run '^$' -bench . -benchtime 5x ./clibench/
package clibench
