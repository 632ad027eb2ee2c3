// Command packfs creates, inspects and extracts pack files.
//
// Usage:
//
//	packfs pack DIR OUT.pack       write a pack of DIR (atomically)
//	packfs unpack PACK DIR         extract PACK into DIR
//	packfs ls [-l] PACK [PATH]     list a directory (or one entry) of PACK
//	packfs cat PACK PATH           write a file of PACK to standard output
//	packfs verify PACK             check every record and content of PACK
//	packfs info PACK               entries, bytes and dedup savings
//	packfs diff A B                what differs between two packs or directories (exit as diff(1))
//	packfs serve PACK|STOREDIR     serve a pack or a store over HTTP (--addr, default 127.0.0.1:8080)
//	packfs store SUBCOMMAND DIR    info, checkpoint, flatten, verify, export, import (packfs store help)
//	packfs version                 the version this binary was built from (also --version)
//
// Every command takes --help. Errors go to standard error and make the exit
// status non-zero. pack and unpack show a progress bar when standard error
// is a terminal.
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
	{name: "pack", args: "DIR OUT.pack", help: "Write a pack of the directory DIR to OUT.pack atomically.", run: cmdPack, nargs: [2]int{2, 2}},
	{name: "unpack", args: "PACK DIR", help: "Extract PACK into DIR (created if missing; existing files are an error).", run: cmdUnpack, nargs: [2]int{2, 2}},
	{name: "ls", args: "[-l] PACK [PATH]", help: "List the directory PATH (default: the root) of PACK, or the entry PATH.", run: cmdLs, flags: lsFlags, nargs: [2]int{1, 2}},
	{name: "cat", args: "PACK PATH", help: "Write the file PATH of PACK to standard output.", run: cmdCat, nargs: [2]int{2, 2}},
	{name: "verify", args: "PACK", help: "Check PACK completely: header, index, tree and every content's checksums.", run: cmdVerify, nargs: [2]int{1, 1}},
	{name: "info", args: "PACK", help: "Print PACK's entry counts, sizes and dedup savings.", run: cmdInfo, nargs: [2]int{1, 1}},
	{name: "diff", args: "A B", help: "List what differs between A and B, each a pack or a directory; exit 0 same, 1 different, 2 trouble.", run: cmdDiff, flags: diffFlags, nargs: [2]int{2, 2}},
	{name: "serve", args: "PACK|STOREDIR", help: "Serve a pack, or a store directory read-only, over HTTP until SIGINT or SIGTERM.", run: cmdServe, flags: serveFlags, nargs: [2]int{1, 1}},
	{name: "store", args: "SUBCMD DIR [ARGS]", help: storeHelp, run: cmdStore, flags: storeFlags, nargs: [2]int{1, 16}},
	{name: "version", help: "Print the version this binary was built from.", run: cmdVersion},
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: packfs COMMAND [ARGS]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-7s %-18s %s\n", c.name, c.args, c.help)
	}
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
	fl.SetOutput(stderr)
	fl.Usage = func() {
		fmt.Fprintf(fl.Output(), "usage: packfs %s %s\n\n%s\n", cmd.name, cmd.args, cmd.help)
		if hasFlags(fl) {
			fmt.Fprintf(fl.Output(), "\noptions:\n")
			fl.PrintDefaults()
		}
	}
	if cmd.flags != nil {
		cmd.flags(fl)
	}
	if err := fl.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fl.SetOutput(stdout)
			fl.Usage()
			return 0
		}
		return 2
	}
	if n := fl.NArg(); n < cmd.nargs[0] || n > cmd.nargs[1] {
		fmt.Fprintf(stderr, "packfs %s: wrong number of arguments\n", cmd.name)
		fl.Usage()
		return 2
	}
	if err := cmd.run(fl, fl.Args(), stdout, stderr); err != nil {
		return exitStatus(cmd.name, err, stderr)
	}
	return 0
}

func hasFlags(fl *flag.FlagSet) bool {
	n := 0
	fl.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}
