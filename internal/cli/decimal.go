package cli

import (
	"errors"
	"strconv"

	"github.com/spf13/pflag"
)

// pflag reads an integer flag as a Go literal: --parallelism 010 was 8,
// --checkpoint-id 0x10 was 16 and 1_0 was 10. sptool's numbers are
// decimal, as clink writes ids ("checkpoint-17"), so its integer flags are
// read in decimal only: 010 is 10, and 0x10 or 1_0 are refused.

// errNotDecimal is the error of a flag value that is not a decimal
// integer (pflag names the flag and the value before it).
var errNotDecimal = errors.New("must be a decimal integer")

// decimalInt is an int flag read in decimal.
type decimalInt struct{ p *int }

func (d decimalInt) String() string { return strconv.Itoa(*d.p) }

func (d decimalInt) Type() string { return "int" }

func (d decimalInt) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, strconv.IntSize)
	if err != nil {
		return decimalErr(err)
	}
	*d.p = int(v)
	return nil
}

// decimalUint64 is a uint64 flag read in decimal.
type decimalUint64 struct{ p *uint64 }

func (d decimalUint64) String() string { return strconv.FormatUint(*d.p, 10) }

func (d decimalUint64) Type() string { return "uint" }

func (d decimalUint64) Set(s string) error {
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return decimalErr(err)
	}
	*d.p = v
	return nil
}

// decimalErr is the error of strconv's err: out of range, or not a
// decimal integer.
func decimalErr(err error) error {
	if errors.Is(err, strconv.ErrRange) {
		return errors.New("out of range")
	}
	return errNotDecimal
}

// intFlag defines an int flag of fs read in decimal (see decimalInt).
func intFlag(fs *pflag.FlagSet, name string, value int, usage string) *int {
	p := new(int)
	*p = value
	fs.Var(decimalInt{p}, name, usage)
	return p
}

// uint64Flag defines a uint64 flag of fs read in decimal (see
// decimalUint64).
func uint64Flag(fs *pflag.FlagSet, name string, value uint64, usage string) *uint64 {
	p := new(uint64)
	*p = value
	fs.Var(decimalUint64{p}, name, usage)
	return p
}
