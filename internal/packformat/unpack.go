package packformat

import (
	"encoding/binary"
	"errors"
	"hash/crc32"

	"github.com/klauspost/compress/zstd"
)

// UnpackTables returns the pack with packed tables held in data as the
// equivalent pack with raw tables: the same header (without
// FlagPackedTables), data region, check table and footer (without
// GroupsOff, its CRC recomputed), the tables stored raw. It checks no
// table CRC; it is for tests and tools that read a pack's bytes
// directly. A pack without packed tables is returned as it is.
func UnpackTables(data []byte) ([]byte, error) {
	if len(data) < HeaderSize+FooterSize3 || binary.LittleEndian.Uint32(data[16:])&FlagPackedTables == 0 {
		return data, nil
	}
	t, ok := DecodeTail(data[:HeaderSize], data[len(data)-FooterSize3:], int64(len(data)))
	if !ok {
		return nil, errors.New("packformat: bad layout")
	}
	f := t.Footer
	l := TablesLayout{f.Count, f.StringsSize, f.FrameCount}
	n := l.Len()
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	out := make([]byte, 0, f.IndexOff+n+t.TableSize+FooterSize3)
	out = append(out, data[:f.IndexOff]...)
	start := uint64(0)
	for g := range Groups(n) {
		end := binary.LittleEndian.Uint64(data[f.GroupsOff+g*GroupEntrySize:])
		raw := min(GroupSize, n-g*GroupSize)
		if end < start || f.IndexOff+end > f.GroupsOff {
			return nil, errors.New("packformat: bad group directory")
		}
		stored := data[f.IndexOff+start : f.IndexOff+end]
		if uint64(len(stored)) == raw {
			out = append(out, stored...)
		} else {
			b, err := dec.DecodeAll(stored, nil)
			if err != nil || uint64(len(b)) != raw {
				return nil, errors.New("packformat: bad table group")
			}
			u := make([]byte, raw)
			l.Unshuffle(u, b, g*GroupSize)
			out = append(out, u...)
		}
		start = end
	}
	out = append(out, data[t.TableOff:t.TableOff+t.TableSize]...)
	binary.LittleEndian.PutUint32(out[16:], binary.LittleEndian.Uint32(data[16:])&^FlagPackedTables)
	f.GroupsOff = 0
	foot := f.Encode3()
	crc := crc32.Update(0, Castagnoli, out[:HeaderSize])
	f.CRC = crc32.Update(crc, Castagnoli, foot[:FooterCRCLen3])
	f.Put3(foot)
	return append(out, foot...), nil
}
