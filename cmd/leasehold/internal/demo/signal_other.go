//go:build !unix

package demo

import (
	"errors"
	"os"
)

const canFreeze = false

func freeze(*os.Process) error { return errors.New("freezing a process needs a Unix system") }

func thaw(*os.Process) error { return nil }
