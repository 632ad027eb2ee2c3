package packsize

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/packfs/packfs/bench/internal/cputime"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
)

// squashfs returns the path of mksquashfs, installing squashfs-tools
// with apt-get when it is missing and this runs as root; "" and why not
// otherwise.
var squashfs = sync.OnceValues(func() (string, string) {
	if p, err := exec.LookPath("mksquashfs"); err == nil {
		return p, ""
	}
	if os.Geteuid() != 0 {
		return "", "mksquashfs is missing and installing squashfs-tools needs root"
	}
	if out, err := exec.Command("apt-get", "install", "-y", "-q", "squashfs-tools").CombinedOutput(); err != nil {
		return "", fmt.Sprintf("apt-get install squashfs-tools: %v: %s", err, lastLine(out))
	}
	p, err := exec.LookPath("mksquashfs")
	if err != nil {
		return "", "squashfs-tools installed, but no mksquashfs on PATH"
	}
	return p, ""
})

func lastLine(b []byte) string {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[i+1:]
	}
	return string(b)
}

// mksquashfs makes a squashfs image of dir with compressor comp, using
// every core, and returns its size and the time it took.
func mksquashfs(tb testing.TB, bin, dir, comp string) (int64, time.Duration) {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "img.sqfs")
	start := time.Now()
	cmd := exec.Command(bin, dir, out, "-comp", comp, "-noappend", "-no-progress", "-quiet",
		"-processors", strconv.Itoa(runtime.NumCPU()))
	if b, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("mksquashfs -comp %s: %v: %s", comp, err, lastLine(b))
	}
	d := time.Since(start)
	fi, err := os.Stat(out)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size(), d
}

// pack writes a pack of dir at zstd level (0: none) and returns its size
// and the time it took.
func pack(tb testing.TB, dir string, level int) (int64, time.Duration) {
	tb.Helper()
	out := filepath.Join(tb.TempDir(), "p.pack")
	start := time.Now()
	writePack(tb, dir, out, level)
	d := time.Since(start)
	fi, err := os.Stat(out)
	if err != nil {
		tb.Fatal(err)
	}
	return fi.Size(), d
}

func writePack(tb testing.TB, dir, out string, level int) {
	tb.Helper()
	if err := packwriter.WriteFile(out, os.DirFS(dir), packwriter.WithCompression(level),
		packwriter.WithSkip(func(string, error) error { return nil })); err != nil {
		tb.Fatal(err)
	}
}

// goRoot returns the Go distribution's root, as go env GOROOT says.
func goRoot(tb testing.TB) string {
	tb.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		tb.Skipf("go env GOROOT: %v", err)
	}
	return string(bytes.TrimSpace(out))
}

// words is the vocabulary of generated text, which compresses about as
// Go source does.
var words = []string{"func ", "return ", "if err != nil {\n", "\t", "x", "y := ", "0x1f", "// a comment\n", "}\n", "package ", "import ", "(", ")", ", ", "string", "int"}

func text(rng *rand.Rand, n int) []byte {
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[rng.IntN(len(words))])
		if rng.IntN(6) == 0 {
			fmt.Fprintf(&b, "%d", rng.Uint32()%100000)
		}
	}
	return b.Bytes()[:n]
}

// tinyTree writes n tiny files (10 to 60 bytes) into dir, 1,000 a
// directory.
func tinyTree(tb testing.TB, dir string, n int) {
	tb.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i/1000))
		if i%1000 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				tb.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%04d.txt", i%1000)), text(rng, 10+rng.IntN(50)), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

func tinyCount() int {
	if n, err := strconv.Atoi(os.Getenv("PACKSIZE_TINY")); err == nil && n > 0 {
		return n
	}
	return 200000
}

// BenchmarkSize reports, per tree, the bytes and the seconds of each
// packer. Run it with -benchtime 1x.
func BenchmarkSize(b *testing.B) {
	goroot := goRoot(b)
	trees := []struct{ name, dir string }{
		{"gosrc", filepath.Join(goroot, "src")},
		{"goroot", goroot},
		{"tiny", ""},
	}
	for _, tr := range trees {
		b.Run("tree="+tr.name, func(b *testing.B) {
			dir := tr.dir
			if dir == "" {
				dir = b.TempDir()
				tinyTree(b, dir, tinyCount())
			}
			for b.Loop() {
				reportSizes(b, dir)
			}
		})
	}
}

func reportSizes(b *testing.B, dir string) {
	raw, rawT := pack(b, dir, 0)
	z3, z3T := pack(b, dir, 3)
	z19, z19T := pack(b, dir, 19)
	b.ReportMetric(float64(raw), "pack-bytes")
	b.ReportMetric(float64(z3), "zstd3-bytes")
	b.ReportMetric(float64(z19), "zstd19-bytes")
	b.ReportMetric(rawT.Seconds(), "pack-s")
	b.ReportMetric(z3T.Seconds(), "zstd3-s")
	b.ReportMetric(z19T.Seconds(), "zstd19-s")
	bin, why := squashfs()
	if bin == "" {
		b.Logf("squashfs columns skipped: %s", why)
		return
	}
	gz, gzT := mksquashfs(b, bin, dir, "gzip")
	zs, zsT := mksquashfs(b, bin, dir, "zstd")
	b.ReportMetric(float64(gz), "sqfs-gzip-bytes")
	b.ReportMetric(float64(zs), "sqfs-zstd-bytes")
	b.ReportMetric(gzT.Seconds(), "sqfs-gzip-s")
	b.ReportMetric(zsT.Seconds(), "sqfs-zstd-s")
	b.ReportMetric(float64(z19)/float64(gz), "zstd19/sqfs-gzip")
	b.ReportMetric(float64(z19)/float64(zs), "zstd19/sqfs-zstd")
	b.ReportMetric(z3T.Seconds()/gzT.Seconds(), "zstd3-time/sqfs-gzip")
}

// readFixture is 20,000 small files as a pack, a compressed pack and a
// Deflate zip, and a 64 MiB file as both packs.
type readFixture struct {
	names              []string // random order
	raw, zstd, zipPath string
	bigRaw, bigZstd    string
}

var (
	readOnce sync.Once
	readFix  readFixture
	readErr  error
	readDir  string
)

const nSmall = 20000

func getReadFixture(b *testing.B) *readFixture {
	readOnce.Do(func() { readErr = buildReadFixture() })
	if readErr != nil {
		b.Fatal(readErr)
	}
	return &readFix
}

func TestMain(m *testing.M) {
	code := m.Run()
	if readDir != "" {
		os.RemoveAll(readDir)
	}
	os.Exit(code)
}

func buildReadFixture() error {
	dir, err := os.MkdirTemp("", "packsize")
	if err != nil {
		return err
	}
	readDir = dir
	rng := rand.New(rand.NewPCG(3, 4))
	small := fstestTree{}
	for i := range nSmall {
		name := fmt.Sprintf("d%02d/f%05d.go", i%20, i)
		small[name] = text(rng, 200+rng.IntN(3800))
		readFix.names = append(readFix.names, name)
	}
	rng.Shuffle(len(readFix.names), func(i, j int) { readFix.names[i], readFix.names[j] = readFix.names[j], readFix.names[i] })
	fsys := small.fs()
	f := &readFix
	f.raw, f.zstd, f.zipPath = filepath.Join(dir, "raw.pack"), filepath.Join(dir, "zstd.pack"), filepath.Join(dir, "deflate.zip")
	if err := packwriter.WriteFile(f.raw, fsys); err != nil {
		return err
	}
	if err := packwriter.WriteFile(f.zstd, fsys, packwriter.WithCompression(3)); err != nil {
		return err
	}
	if err := writeZip(f.zipPath, small); err != nil {
		return err
	}
	big := fstestTree{"big": text(rng, 64<<20)}
	f.bigRaw, f.bigZstd = filepath.Join(dir, "bigraw.pack"), filepath.Join(dir, "bigzstd.pack")
	if err := packwriter.WriteFile(f.bigRaw, big.fs()); err != nil {
		return err
	}
	return packwriter.WriteFile(f.bigZstd, big.fs(), packwriter.WithCompression(3))
}

func writeZip(name string, tree fstestTree) error {
	out, err := os.Create(name)
	if err != nil {
		return err
	}
	zw := zip.NewWriter(out)
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.DefaultCompression) })
	for _, n := range sortedKeys(tree) {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: n, Method: zip.Deflate})
		if err != nil {
			return err
		}
		if _, err := w.Write(tree[n]); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return out.Close()
}

type opener func() (fs.FS, func() error, error)

func (f *readFixture) backends() []struct {
	name string
	open opener
} {
	pk := func(p string, opts ...packreader.Option) opener {
		return func() (fs.FS, func() error, error) {
			r, err := packreader.Open(p, opts...)
			if err != nil {
				return nil, nil, err
			}
			return r, r.Close, nil
		}
	}
	return []struct {
		name string
		open opener
	}{
		{"pack", pk(f.raw)},
		{"pack-zstd", pk(f.zstd)},
		// A cache that holds every frame of the 20,000 files (40 MB).
		{"pack-zstd-cache64M", pk(f.zstd, packreader.WithCacheSize(64<<20))},
		{"zip-deflate", func() (fs.FS, func() error, error) {
			z, err := zip.OpenReader(f.zipPath)
			if err != nil {
				return nil, nil, err
			}
			return z, z.Close, nil
		}},
	}
}

// BenchmarkRandomRead reads the 20,000 small files in a random order:
// warm (after an untimed pass; ns per file) and cold (a fresh open and
// one pass; ns per file reported as ns/file).
func BenchmarkRandomRead(b *testing.B) {
	f := getReadFixture(b)
	for _, be := range f.backends() {
		b.Run("state=warm/backend="+be.name, func(b *testing.B) {
			fsys, closeFS, err := be.open()
			if err != nil {
				b.Fatal(err)
			}
			defer closeFS()
			for _, n := range f.names {
				if _, err := fs.ReadFile(fsys, n); err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			for b.Loop() {
				if _, err := fs.ReadFile(fsys, f.names[i%len(f.names)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run("state=cold/backend="+be.name, func(b *testing.B) {
			for b.Loop() {
				fsys, closeFS, err := be.open()
				if err != nil {
					b.Fatal(err)
				}
				for _, n := range f.names {
					if _, err := fs.ReadFile(fsys, n); err != nil {
						b.Fatal(err)
					}
				}
				closeFS()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(f.names)), "ns/file")
		})
	}
}

// BenchmarkSeqRead reads the 64 MiB file whole (WriteTo), from a Reader
// opened once, and from the compressed pack cold, through WriteTo,
// through Read with a 32 KiB buffer and through ReadFile.
func BenchmarkSeqRead(b *testing.B) {
	f := getReadFixture(b)
	for _, p := range []struct{ name, path string }{{"pack", f.bigRaw}, {"pack-zstd", f.bigZstd}} {
		b.Run("backend="+p.name, func(b *testing.B) {
			r, err := packreader.Open(p.path)
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.SetBytes(64 << 20)
			cpu := cputime.Start()
			for b.Loop() {
				h, err := r.Open("big")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := h.(io.WriterTo).WriteTo(io.Discard); err != nil {
					b.Fatal(err)
				}
				h.Close()
			}
			cpu.Report(b, 1, "op")
		})
	}
	// Cold: a fresh Reader each time, so that every frame is decompressed
	// (the default cache holds the whole file after one pass).
	b.Run("backend=pack-zstd-cold", func(b *testing.B) {
		b.SetBytes(64 << 20)
		cpu := cputime.Start()
		for b.Loop() {
			r, err := packreader.Open(f.bigZstd)
			if err != nil {
				b.Fatal(err)
			}
			h, err := r.Open("big")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := h.(io.WriterTo).WriteTo(io.Discard); err != nil {
				b.Fatal(err)
			}
			h.Close()
			r.Close()
		}
		cpu.Report(b, 1, "op")
	})
	// Cold, through Read with io.Copy's 32 KiB buffer, as io.Copy reads
	// through a wrapper that hides WriteTo (or bufio with a large one).
	b.Run("backend=pack-zstd-cold-Read32K", func(b *testing.B) {
		b.SetBytes(64 << 20)
		buf := make([]byte, 32<<10)
		cpu := cputime.Start()
		for b.Loop() {
			r, err := packreader.Open(f.bigZstd)
			if err != nil {
				b.Fatal(err)
			}
			h, err := r.Open("big")
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{h}, buf)
			if err != nil || n != 64<<20 {
				b.Fatal(n, err)
			}
			h.Close()
			r.Close()
		}
		cpu.Report(b, 1, "op")
	})
	// Cold, through ReadFile: a copy of the whole file.
	b.Run("backend=pack-zstd-cold-ReadFile", func(b *testing.B) {
		b.SetBytes(64 << 20)
		cpu := cputime.Start()
		for b.Loop() {
			r, err := packreader.Open(f.bigZstd)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := r.ReadFile("big"); err != nil {
				b.Fatal(err)
			}
			r.Close()
		}
		cpu.Report(b, 1, "op")
	})
}

// BenchmarkSeqReadCeiling is what SeqRead's cold read is measured
// against: the zstd decoder alone on the 64 MiB file's frames, cut and
// compressed as the pack's writer does (1 MiB frames, level 3), decoded
// with DecodeAll into buffers reused from one frame to the next, by one
// goroutine and by GOMAXPROCS of them (each its own decoder, a frame at
// a time), with nothing else: no check, no cache, no copy. The file is
// generated text of short words and numbers (content=text), whose short
// matches decode slower than real source: content=gosrc is the same
// over 64 MiB of the Go distribution's .go files.
func BenchmarkSeqReadCeiling(b *testing.B) {
	f := getReadFixture(b)
	r, err := packreader.Open(f.bigRaw)
	if err != nil {
		b.Fatal(err)
	}
	data, err := fs.ReadFile(r, "big")
	r.Close()
	if err != nil {
		b.Fatal(err)
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(3)), zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false))
	if err != nil {
		b.Fatal(err)
	}
	const frame = 1 << 20
	contents := []struct {
		name string
		data []byte
	}{{"text", data}, {"gosrc", goSource(b, len(data))}}
	for _, c := range contents {
		var frames [][]byte
		for off := 0; off < len(c.data); off += frame {
			frames = append(frames, enc.EncodeAll(c.data[off:min(off+frame, len(c.data))], nil))
		}
		ceiling(b, "content="+c.name+"/", frames, int64(len(c.data)))
	}
}

// goSource returns n bytes of the Go distribution's .go files, one after
// another in walk order (fewer if there are not so many).
func goSource(b *testing.B, n int) []byte {
	b.Helper()
	var src []byte
	err := filepath.WalkDir(filepath.Join(goRoot(b), "src"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || len(src) >= n {
			return err
		}
		if d.Type().IsRegular() && filepath.Ext(p) == ".go" {
			bb, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			src = append(src, bb...)
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return src[:min(len(src), n)]
}

// ceiling runs SeqReadCeiling over frames of size bytes in all.
func ceiling(b *testing.B, prefix string, frames [][]byte, size int64) {
	const frame = 1 << 20
	for _, g := range []int{1, runtime.GOMAXPROCS(0)} {
		b.Run(fmt.Sprintf("%sgoroutines=%d", prefix, g), func(b *testing.B) {
			decs := make([]*zstd.Decoder, g)
			bufs := make([][]byte, g)
			for k := range decs {
				dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(false))
				if err != nil {
					b.Fatal(err)
				}
				decs[k] = dec
				defer decs[k].Close()
				// 16 bytes past the frame: the slack the decoder's
				// fastest copies write into.
				bufs[k] = make([]byte, frame+16)
			}
			b.SetBytes(size)
			cpu := cputime.Start()
			for b.Loop() {
				var wg sync.WaitGroup
				for k := range g {
					wg.Go(func() {
						for i := k; i < len(frames); i += g {
							if _, err := decs[k].DecodeAll(frames[i], bufs[k][:0]); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
			}
			cpu.Report(b, 1, "op")
		})
	}
}

// BenchmarkFirstByte opens the pack, opens the 64 MiB file, reads one
// byte and closes both.
func BenchmarkFirstByte(b *testing.B) {
	f := getReadFixture(b)
	for _, p := range []struct{ name, path string }{{"pack", f.bigRaw}, {"pack-zstd", f.bigZstd}} {
		b.Run("backend="+p.name, func(b *testing.B) {
			var one [1]byte
			for b.Loop() {
				r, err := packreader.Open(p.path)
				if err != nil {
					b.Fatal(err)
				}
				h, err := r.Open("big")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := h.Read(one[:]); err != nil {
					b.Fatal(err)
				}
				h.Close()
				r.Close()
			}
		})
	}
}

// BenchmarkSeqReadExecutable reads the go command's executable (15 MB
// in Go 1.26) whole from a compressed pack, opened once without a cache
// of decompressed frames, so that every pass decompresses every frame:
// what the x86 filter's reverse pass costs on top of decompression
// (FORMAT.md, "Frame filters").
func BenchmarkSeqReadExecutable(b *testing.B) {
	exe := filepath.Join(goRoot(b), "bin", "go")
	data, err := os.ReadFile(exe)
	if err != nil {
		b.Skip(err)
	}
	out := filepath.Join(b.TempDir(), "exe.pack")
	if err := packwriter.WriteFile(out, fstestTree{"go": data}.fs(), packwriter.WithCompression(3)); err != nil {
		b.Fatal(err)
	}
	r, err := packreader.Open(out, packreader.WithCacheSize(0))
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		h, err := r.Open("go")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := h.(io.WriterTo).WriteTo(io.Discard); err != nil {
			b.Fatal(err)
		}
		h.Close()
	}
}
