//go:build !linux

package image

import (
	"io"

	"github.com/bourse/bourse"
)

// errUnsupported: unpacking safely needs Linux's openat2.
var errUnsupported = &bourse.Error{Code: bourse.EUnavailable, Op: "image", Message: "images are unpacked on Linux only"}

func checkRootSupport(string) error       { return errUnsupported }
func syncFS(string) error                 { return errUnsupported }
func (u *unpacker) open(string) error     { return errUnsupported }
func (u *unpacker) apply(io.Reader) error { return errUnsupported }
func (u *unpacker) close()                {}
