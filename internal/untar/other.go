//go:build !linux

package untar

import (
	"io"

	"github.com/bourse/bourse"
)

// errUnsupported: unpacking safely needs Linux's openat2.
var errUnsupported = &bourse.Error{Code: bourse.EUnavailable, Op: "untar", Message: "archives are unpacked on Linux only"}

func CheckSupport(string) error             { return errUnsupported }
func Create(string, Options) (*Root, error) { return nil, errUnsupported }
func Open(string, Options) (*Root, error)   { return nil, errUnsupported }
func (u *Root) Apply(io.Reader) error       { return errUnsupported }
func (u *Root) Close()                      {}
