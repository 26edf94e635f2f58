package cli

// IntFlags reads int flags by name, as a *pflag.FlagSet does.
type IntFlags interface {
	GetInt(name string) (int, error)
}

// PositiveInts returns a usage error naming the first of the int flags
// names of fs whose value is below 1. The options these flags fill take
// 0 for their default, so without it a "--jobs 0" would run with the
// default instead of being refused.
func PositiveInts(fs IntFlags, names ...string) error {
	for _, name := range names {
		n, err := fs.GetInt(name)
		if err != nil {
			return err
		}
		if n < 1 {
			return Usagef("--%s %d must be positive", name, n)
		}
	}
	return nil
}
