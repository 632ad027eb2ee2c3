// Command packfs creates, inspects and extracts pack files.
//
// Usage:
//
//	packfs pack DIR OUT.pack       write a pack of DIR (atomically; - streams it)
//	packfs unpack PACK DIR [PATH]  extract PACK (or its subtrees PATH) into DIR
//	packfs ls [-lR] PACK [PATH]    list a directory (or one entry, or a subtree) of PACK
//	packfs cat PACK PATH           write a file of PACK to standard output
//	packfs verify PACK             check every record and content of PACK
//	packfs info PACK               entries, bytes and dedup savings
//	packfs diff A B                what differs between two packs or directories (exit as diff(1))
//	packfs serve PACK|STOREDIR     serve a pack or a store over HTTP (--addr, default 127.0.0.1:8080)
//	packfs mount SOURCE DIR        mount a pack, a stack, a directory or a store through FUSE
//	packfs store SUBCOMMAND DIR    info, checkpoint, flatten, verify, export, import (packfs store help)
//	packfs version                 the version this binary was built from (also --version)
//
// Every command takes --help; flags may follow the arguments, and "--"
// ends them. Errors go to standard error and make the exit status
// non-zero: 2 for a mistake in the command line, 1 otherwise. pack and
// unpack show a progress bar when standard error is a terminal.
//
// pack writes OUT.pack atomically (temporary file, fsync, rename) when it
// is a regular file or missing, through a symlink to the file it names;
// "-" or a FIFO gets the pack streamed; any other kind of OUT is refused.
// The output is never packed into itself. An entry that cannot be packed
// (a socket, FIFO or device, a file that vanished or cannot be read, a
// name that is not UTF-8, a path past PATH_MAX) is reported and left out,
// and the exit status is 1; -strict stops at the first instead. Files are
// opened without blocking and without following symlinks (on Linux 5.6
// and later, none on the whole path), so one that turns into a FIFO or a
// symlink while the pack runs is reported, not waited on or followed
// out of DIR.
//
// mount serves its SOURCE at MOUNTPOINT through FUSE, in the foreground,
// until it is unmounted (fusermount3 -u MOUNTPOINT) or signalled (SIGINT,
// SIGTERM). SOURCE is a pack, packs stacked top first (a.pack:b.pack,
// where an element may also be a host directory), a pack in a bucket
// (an s3:// URL, alone), a host directory (read-only), or a store directory (read-write and durable: a program's
// fsync is a commit). --upper DIR puts a store, created if DIR is missing
// or empty, over a read-only SOURCE, as overlayfs puts an upperdir over
// lowerdirs: removing, renaming and replacing SOURCE's names is recorded
// in the store (whiteouts, opaque directories) and is durable as its
// other changes are. The store records which SOURCE it was made over (a
// pack by its size and sum), and a mount of DIR over another SOURCE, or
// over none, is refused. On a signal the store is synced (and checkpointed with
// -checkpoint) and the file system unmounted; while a program still uses
// it the unmount fails and mount goes on serving, and a second signal
// detaches it. -d logs every FUSE request.
//
// A PACK argument must be a regular file: a FIFO or a device is refused
// rather than waited on or read until it ends.
//
// unpack extracts what is sound: a damaged entry is reported and left out
// with nothing of it in place, directory modes and times are restored in
// every case, and the exit status is then 1. Nothing is written outside
// DIR: a symlink found in DIR where a directory goes is never followed
// (it is an error, or replaced with -force). Owners are not restored, so
// files lose setuid and setgid bits, as with tar run without
// --same-owner. Paths given to ls and cat are cleaned as a shell user
// writes them ("net/", "./net", "/net", "net//http").
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type command struct {
	name, args, help string
	run              func(fl *flag.FlagSet, args []string, stdout, stderr io.Writer) error
	flags            func(fl *flag.FlagSet)
	nargs            [2]int // minimum and maximum positional arguments
}

var commands = []*command{
	{name: "pack", args: "DIR OUT.pack", help: "Write a pack of the directory DIR to OUT.pack atomically (- or a FIFO: stream it there). Entries that cannot be packed are reported and left out.", run: cmdPack, flags: packFlags, nargs: [2]int{2, 2}},
	{name: "unpack", args: "PACK DIR [PATH...]", help: "Extract PACK, or only the subtrees PATH, into DIR (created if missing; directories merge; existing files are an error without -force).", run: cmdUnpack, flags: unpackFlags, nargs: [2]int{2, 1 << 20}},
	{name: "ls", args: "[-l|-R|-json|-0] PACK [PATH]", help: "List the directory PATH (default: the root) of PACK, or the entry PATH.", run: cmdLs, flags: lsFlags, nargs: [2]int{1, 2}},
	{name: "cat", args: "PACK PATH", help: "Write the file PATH of PACK to standard output.", run: cmdCat, nargs: [2]int{2, 2}},
	{name: "verify", args: "PACK", help: "Check PACK completely: header, index, tree and every content's checksums.", run: cmdVerify, nargs: [2]int{1, 1}},
	{name: "info", args: "PACK", help: "Print PACK's format and compression, entry counts, frames (and how many went through the x86-64 filter), sizes and dedup savings.", run: cmdInfo, flags: infoFlags, nargs: [2]int{1, 1}},
	{name: "diff", args: "A B", help: "List what differs between A and B, each a pack or a directory; exit 0 same, 1 different, 2 trouble.", run: cmdDiff, flags: diffFlags, nargs: [2]int{2, 2}},
	{name: "serve", args: "PACK|STOREDIR", help: "Serve a pack, or a store directory read-only, over HTTP until SIGINT or SIGTERM.", run: cmdServe, flags: serveFlags, nargs: [2]int{1, 1}},
	{name: "mount", args: "SOURCE MOUNTPOINT", help: mountHelp, run: cmdMount, flags: mountFlags, nargs: [2]int{2, 2}},
	{name: "store", args: "SUBCMD DIR [ARGS]", help: storeHelp, run: cmdStore, flags: storeFlags, nargs: [2]int{1, 16}},
	{name: "version", help: "Print the version this binary was built from.", run: cmdVersion},
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: packfs COMMAND [ARGS]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-7s %-18s %s\n", c.name, c.args, c.help)
	}
	fmt.Fprintf(w, "\n%s\n", remoteHelp)
	fmt.Fprintf(w, "\nRun 'packfs COMMAND --help' for a command's options.\n")
}

// run runs the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(stdout)
		return 0
	case "-version", "--version":
		args = []string{"version"}
	}
	var cmd *command
	for _, c := range commands {
		if c.name == args[0] {
			cmd = c
		}
	}
	if cmd == nil {
		fmt.Fprintf(stderr, "packfs: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	fl := flag.NewFlagSet("packfs "+cmd.name, flag.ContinueOnError)
	// The flag package would print its errors and the usage itself, to
	// one writer; the usage goes to stdout when asked for and to stderr
	// after a mistake, once.
	fl.SetOutput(io.Discard)
	fl.Usage = func() {}
	printUsage := func(w io.Writer) {
		fmt.Fprintf(w, "usage: packfs %s %s\n\n%s\n", cmd.name, cmd.args, cmd.help)
		if hasFlags(fl) {
			fmt.Fprintf(w, "\noptions:\n")
			fl.SetOutput(w)
			fl.PrintDefaults()
			fl.SetOutput(io.Discard)
		}
	}
	if cmd.flags != nil {
		cmd.flags(fl)
	}
	pos, err := parse(fl, args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "packfs %s: %s\n", cmd.name, printable(err.Error()))
		printUsage(stderr)
		return 2
	}
	if n := len(pos); n < cmd.nargs[0] || n > cmd.nargs[1] {
		fmt.Fprintf(stderr, "packfs %s: wrong number of arguments\n", cmd.name)
		printUsage(stderr)
		return 2
	}
	if err := cmd.run(fl, pos, stdout, stderr); err != nil {
		return exitStatus(cmd.name, err, stderr)
	}
	return 0
}

// parse parses args with fl, letting flags come after positional
// arguments too (ls PACK -l), as GNU tools do; "--" ends the flags, and
// "-" alone is an argument. It returns the positional arguments.
func parse(fl *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fl.Parse(args); err != nil {
			return nil, err
		}
		rest := fl.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func hasFlags(fl *flag.FlagSet) bool {
	n := 0
	fl.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}
