package x86filter

import (
	"bytes"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// encodings are hand-made cases: input, encoded.
var encodings = []struct{ name, in, out string }{
	{"empty", "", ""},
	{"short", "\xe8\x01\x00\x00", "\xe8\x01\x00\x00"},
	{"call", "\xe8\x01\x00\x00\x00", "\xe8\x06\x00\x00\x00"},
	{"jmp back", "\x90\xe9\xfa\xff\xff\xff", "\x90\xe9\x00\x00\x00\x00"},
	{"far", "\xe8\x01\x00\x00\x01", "\xe8\x01\x00\x00\x01"},
	{"wraps", "\xe8\xff\xff\xff\x00", "\xe8\x04\x00\x00\xff"},
	{"lea", "\x48\x8d\x05\x10\x00\x00\x00", "\x48\x8d\x05\x17\x00\x00\x00"},
	{"mov store", "\x4c\x89\x3d\x00\x00\x00\x00", "\x4c\x89\x3d\x07\x00\x00\x00"},
	{"not rip", "\x48\x8d\x45\x10\x00\x00\x00", "\x48\x8d\x45\x10\x00\x00\x00"},
	{"lea cut", "\x48\x8d\x05\x10\x00\x00", "\x48\x8d\x05\x10\x00\x00"},
	// The field of a call that is not converted is skipped all the
	// same: the E8 inside it is no call.
	{"skip", "\xe8\xe8\x00\x00\x01\xe8\x00\x00\x00\x00", "\xe8\xe8\x00\x00\x01\xe8\x0a\x00\x00\x00"},
}

func TestEncodings(t *testing.T) {
	for _, c := range encodings {
		b := []byte(c.in)
		Encode(b)
		if string(b) != c.out {
			t.Errorf("%s: Encode(% x) = % x, want % x", c.name, c.in, b, c.out)
		}
		Decode(b)
		if string(b) != c.in {
			t.Errorf("%s: Decode(Encode(% x)) = % x", c.name, c.in, b)
		}
	}
}

// TestExecutable round-trips this test's own binary, an executable of the
// machine it runs on, and checks that the filter finds fields in it.
func TestExecutable(t *testing.T) {
	p, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Skip(err)
	}
	b := bytes.Clone(data)
	Encode(b)
	if bytes.Equal(b, data) {
		t.Fatal("Encode changed nothing in an executable")
	}
	Decode(b)
	if !bytes.Equal(b, data) {
		t.Fatal("Decode(Encode(executable)) differs")
	}
	// Frames are filtered one by one: any cut round-trips too.
	for off := 0; off < len(data); off += 1 << 20 {
		f := bytes.Clone(data[off:min(off+1<<20, len(data))])
		Encode(f)
		Decode(f)
		if !bytes.Equal(f, data[off:min(off+1<<20, len(data))]) {
			t.Fatalf("frame at %d differs after a round trip", off)
		}
	}
}

// TestBijection checks both directions on random buffers dense in
// patterns, whose fields overlap in every way.
func TestBijection(t *testing.T) {
	alphabet := []byte{0xe8, 0xe9, 0x48, 0x4c, 0x8d, 0x8b, 0x89, 0x05, 0x3d, 0x00, 0xff, 0x01}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 16))
		b := make([]byte, rng.IntN(300))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		checkBijection(t, b)
	}
}

func checkBijection(t *testing.T, b []byte) {
	t.Helper()
	x := bytes.Clone(b)
	Encode(x)
	Decode(x)
	if !bytes.Equal(x, b) {
		t.Fatalf("Decode(Encode(% x)) = % x", b, x)
	}
	Decode(x)
	Encode(x)
	if !bytes.Equal(x, b) {
		t.Fatalf("Encode(Decode(% x)) = % x", b, x)
	}
}

// FuzzBijection: whatever the bytes (a hostile frame decompresses to
// anything), Decode neither fails nor panics, Encode undoes it, and both
// do what the reference does.
func FuzzBijection(f *testing.F) {
	for _, c := range encodings {
		f.Add([]byte(c.in))
		f.Add([]byte(c.out))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkBijection(t, b)
		for _, enc := range []bool{true, false} {
			x, y := bytes.Clone(b), bytes.Clone(b)
			walk(x, enc)
			reference(y, enc)
			if !bytes.Equal(x, y) {
				t.Fatalf("walk(% x, %v) = % x, the reference % x", b, enc, x, y)
			}
		}
	})
}

func TestExecutableHeader(t *testing.T) {
	elf := []byte("\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x3e\x00")
	if !Executable(elf) {
		t.Error("x86-64 ELF header not recognized")
	}
	elf[16] = 3 // ET_DYN: a shared object, or a position-independent executable
	if !Executable(elf) {
		t.Error("x86-64 ELF shared object not recognized")
	}
	elf[16] = 2
	for _, c := range []struct {
		name string
		at   int
		b    byte
	}{{"32-bit", 4, 1}, {"big-endian", 5, 2}, {"arm64", 18, 0xb7}, {"magic", 1, 'e'}, {"relocatable", 16, 1}, {"core", 16, 4}} {
		b := bytes.Clone(elf)
		b[c.at] = c.b
		if Executable(b) {
			t.Errorf("%s header taken for x86-64", c.name)
		}
	}
	if Executable(elf[:19]) {
		t.Error("19 bytes taken for a header")
	}
}

// frame returns the first MiB of this test's binary, as a frame of an
// executable.
func frame(b *testing.B) []byte {
	p, err := os.Executable()
	if err != nil {
		b.Skip(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		b.Skip(err)
	}
	return data[:min(len(data), 1<<20)]
}

// BenchmarkDecode runs Decode and Encode over a frame of an executable.
func BenchmarkDecode(b *testing.B) {
	data := frame(b)
	Encode(data)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Decode(data)
		Encode(data)
	}
}

// BenchmarkZstdDecodeAll decompresses the same frame, compressed at the
// writer's level 19, on one goroutine: what Decode adds to.
func BenchmarkZstdDecodeAll(b *testing.B) {
	data := frame(b)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		b.Fatal(err)
	}
	c := enc.EncodeAll(data, nil)
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		b.Fatal(err)
	}
	defer dec.Close()
	out := make([]byte, 0, len(data))
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if out, err = dec.DecodeAll(c, out[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

// reference is the filter as its doc states it, a byte at a time: the
// word-at-a-time skip of walk must change nothing.
func reference(b []byte, enc bool) {
	for i := 0; ; {
		var f int
		switch {
		case i+5 <= len(b) && (b[i] == 0xe8 || b[i] == 0xe9):
			f = i + 1
		case i+7 <= len(b) && b[i]&0xf0 == 0x40 && (b[i+1] == 0x89 || b[i+1] == 0x8b || b[i+1] == 0x8d) && b[i+2]&0xc7 == 0x05:
			f = i + 3
		case i < len(b):
			i++
			continue
		default:
			return
		}
		i = f + 4
		if b[f+3] != 0 && b[f+3] != 0xff {
			continue
		}
		v := int32(uint32(b[f]) | uint32(b[f+1])<<8 | uint32(b[f+2])<<8<<8 | uint32(b[f+3])<<24)
		if enc {
			v += int32(i)
		} else {
			v -= int32(i)
		}
		v = v << 7 >> 7 // modulo 2^25, sign-extended from bit 24
		b[f], b[f+1], b[f+2], b[f+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
	}
}

func TestReference(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		for _, enc := range []bool{true, false} {
			x, y := bytes.Clone(b), bytes.Clone(b)
			walk(x, enc)
			reference(y, enc)
			if !bytes.Equal(x, y) {
				t.Fatalf("walk(% x, %v) = % x, the reference % x", b, enc, x, y)
			}
		}
	}
	alphabet := []byte{0xe8, 0xe9, 0x48, 0x4c, 0x8d, 0x8b, 0x89, 0x05, 0x3d, 0x00, 0xff, 0x01}
	for seed := range uint64(500) {
		rng := rand.New(rand.NewPCG(seed, 17))
		b := make([]byte, rng.IntN(64))
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		check(b)
	}
	if p, err := os.Executable(); err == nil {
		if data, err := os.ReadFile(p); err == nil {
			check(data[:min(len(data), 4<<20)])
		}
	}
}
