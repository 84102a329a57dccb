package dedup

import "github.com/godwarfs/godwarfs/internal/chmod"

func parseChmod(spec string) (*chmod.Changer, error) { return chmod.Parse(spec) }

// CheckChmod validates a --chmod specification.
func CheckChmod(spec string) error {
	_, err := chmod.Parse(spec)
	return err
}
