package mem

// NewIndexed returns an empty layer whose every directory of two entries
// or more keeps a hash index, so that the suites run over indexes.
func NewIndexed() *FS {
	f := New()
	f.indexMin, f.indexDrop = 2, 1
	return f
}

// RaceEnabled says whether the race detector is on, for the external tests.
const RaceEnabled = raceEnabled
