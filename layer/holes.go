package layer

import "io"

// SeekData and SeekHole are the whences of lseek(2) for sparse files,
// which the Seek of a [HoleSeeker] takes: Seek(off, SeekData) moves to
// the first offset at or after off that holds data, Seek(off, SeekHole)
// to the first that starts a hole, the end of the file counting as one;
// at or past the end, both fail with an error wrapping syscall.ENXIO. A
// layer may report a hole as data (a run of zeros it keeps, or the rest
// of a block): only what it reports as a hole is sure to read as zeros.
const (
	SeekData = 3
	SeekHole = 4
)

// HoleSeeker is an open file whose Seek takes SeekData and SeekHole, as
// an *os.File's does on Linux: a copy of it need read only its data.
// packwriter stores the rest as holes, and a union's copy-up into
// layer/mem keeps them, so that a sparse file costs its data, not its
// size.
type HoleSeeker interface {
	io.Seeker
	// SeeksHoles reports whether Seek takes SeekData and SeekHole; a
	// file that wraps another answers for it.
	SeeksHoles() bool
}
