package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"

	"github.com/packfs/packfs"
	"github.com/packfs/packfs/packreader"
	"github.com/packfs/packfs/packwriter"
	"github.com/packfs/packfs/remote"
)

// A pack may be named by a bucket URL wherever a command reads one
// (ls, cat, verify, info, unpack, diff, serve), and pack uploads to one:
//
//	s3://BUCKET/KEY?endpoint=http://127.0.0.1:9000&region=us-east-1
//
// Credentials come from the query (access_key_id, secret_access_key,
// session_token) or the AWS_* environment variables; see remote.ParseURL.

// remoteHelp is appended to the usage.
const remoteHelp = `A PACK may be a bucket URL, s3://BUCKET/KEY?endpoint=URL&region=R (credentials
from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or the query), and pack
uploads to one: packfs pack DIR s3://BUCKET/KEY. cache_dir=DIR in the query
(or PACKFS_CACHE_DIR) keeps fetched blocks in DIR for later runs.`

// openRemotePack opens the pack a bucket URL names. The reader's Close
// leaves the object, which holds nothing but memory, to the process's end.
func openRemotePack(raw string) (*packreader.Reader, *remote.Pack, error) {
	b, key, err := remote.OpenURL(raw, nil)
	if err != nil {
		return nil, nil, err
	}
	if key == "" {
		return nil, nil, &fs.PathError{Op: "open", Path: raw, Err: fmt.Errorf("%w: no object key", remote.ErrBadURL)}
	}
	p, err := b.OpenPack(context.Background(), key)
	if err != nil {
		return nil, nil, err
	}
	return p.Reader, p, nil
}

// uploadPack writes the pack of src to a temporary file and uploads it
// to the bucket URL raw: the object appears whole or not at all.
func uploadPack(raw string, src fs.FS, opts []packwriter.Option) error {
	b, key, err := remote.OpenURL(raw, nil)
	if err != nil {
		return err
	}
	if key == "" {
		return &fs.PathError{Op: "put", Path: raw, Err: fmt.Errorf("%w: no object key", remote.ErrBadURL)}
	}
	f, err := os.CreateTemp("", "packfs-upload-*.pack")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := packwriter.Write(f, src, opts...); err != nil {
		return err
	}
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	_, err = b.UploadPackFrom(context.Background(), key, f, fi.Size(), nil)
	return err
}

// openServedRemote opens a pack in a bucket for serve; its fingerprint is
// its ETag, which changes with any byte.
func openServedRemote(raw string) (*servedTree, error) {
	r, p, err := openRemotePack(raw)
	if err != nil {
		return nil, err
	}
	h := sha256.Sum256([]byte("s3\x00" + raw + "\x00" + p.Object().ETag()))
	t := &servedTree{kind: "pack", fsys: r, fp: h[:], close: p.Close}
	st, err := r.Stats()
	if err != nil {
		p.Close()
		return nil, err
	}
	if st.Whiteouts > 0 {
		t.fsys = packfs.New(nil, r)
	}
	return t, nil
}
