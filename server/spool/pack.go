package spool

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// pack writes the regular files and directories under dir into a tar
// archive at path, in the order WalkDir meets them, up to limit bytes of
// archive; files past the limit, and what is not a regular file or a
// directory (links, devices), are left out and returned, each with why.
// A missing dir makes an empty archive. The archive replaces path whole.
func pack(dir, path string, limit int64) ([]string, error) {
	tmp := path + ".new"
	out, err := os.Create(tmp)
	if err != nil {
		return nil, err
	}
	tw := tar.NewWriter(out)
	var omitted []string
	var size int64 = 1024 // the archive's end: two zero blocks
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == dir {
			return filepath.SkipAll
		}
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		name := filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			if size+512 > limit {
				omitted = append(omitted, name+"/: over the results cap")
				return filepath.SkipDir
			}
			size += 512
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o750})
		case !d.Type().IsRegular():
			omitted = append(omitted, name+": not a regular file")
			return nil
		}
		return addFile(tw, p, name, limit, &size, &omitted)
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return nil, err
	}
	return omitted, nil
}

// addFile adds one regular file, if it fits. It opens the file without
// following a link: what the job left cannot point the server elsewhere.
func addFile(tw *tar.Writer, p, name string, limit int64, size *int64, omitted *[]string) error {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		*omitted = append(*omitted, fmt.Sprintf("%s: %v", name, err))
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		*omitted = append(*omitted, name+": not a regular file")
		return nil
	}
	need := 512 + (fi.Size()+511)/512*512
	if len(name) > 100 {
		need += 512 + (int64(len(name))+64+511)/512*512 // a PAX header holds the long name
	}
	if *size+need > limit {
		*omitted = append(*omitted, fmt.Sprintf("%s: %d bytes, over the results cap", name, fi.Size()))
		return nil
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o640, Size: fi.Size(), ModTime: fi.ModTime()}); err != nil {
		return err
	}
	// The job has ended; should the file still change, the archive holds
	// the size its header says, no more.
	if _, err := io.CopyN(tw, f, fi.Size()); err != nil {
		return err
	}
	*size += need
	return nil
}
