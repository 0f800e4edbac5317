//go:build !linux

package image

import "github.com/bourse/bourse"

// errUnsupported: unpacking safely needs Linux's openat2.
var errUnsupported = &bourse.Error{Code: bourse.EUnavailable, Op: "image", Message: "images are unpacked on Linux only"}

func syncFS(string) error { return errUnsupported }
