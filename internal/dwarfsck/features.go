package dwarfsck

import (
	"strconv"
	"strings"

	"github.com/godwarfs/godwarfs/internal/cli"
)

// Features selects the parts of dwarfsck's report (-d). The names and the
// levels are the reference's.
type Features uint32

const (
	FeatVersion Features = 1 << iota
	FeatHistory
	FeatMetadataSummary
	FeatMetadataDetails
	FeatMetadataFullDump
	FeatFrozenAnalysis
	FeatFrozenDetails
	FeatFrozenLayout
	FeatSchemaRawDump
	FeatDirectoryTree
	FeatSectionDetails
	FeatChunkDetails
)

// featureNames are in bit order.
var featureNames = []string{
	"version", "history", "metadata_summary", "metadata_details", "metadata_full_dump",
	"frozen_analysis", "frozen_details", "frozen_layout", "schema_raw_dump",
	"directory_tree", "section_details", "chunk_details",
}

// implemented are the features godwarfs can show. The others (the
// reference's dumps of its Thrift/Frozen2 internals) are part of levels
// but refused when asked for by name.
const implemented = FeatVersion | FeatHistory | FeatMetadataSummary | FeatMetadataFullDump |
	FeatDirectoryTree | FeatSectionDetails | FeatChunkDetails

// levelAdds lists what each detail level adds to the one below.
var levelAdds = []Features{
	0,
	FeatVersion | FeatMetadataSummary,
	FeatFrozenAnalysis | FeatHistory,
	FeatFrozenDetails | FeatMetadataDetails | FeatSectionDetails,
	FeatDirectoryTree | FeatFrozenLayout,
	FeatChunkDetails,
	FeatMetadataFullDump,
	FeatSchemaRawDump,
}

// MaxDetail is the highest -d level (len(levelAdds)-1).
const MaxDetail = 7

// FeaturesForLevel returns the features of detail level n (0..MaxDetail).
func FeaturesForLevel(n int) Features {
	var f Features
	for i := 0; i <= n && i < len(levelAdds); i++ {
		f |= levelAdds[i]
	}
	return f
}

// ParseFeatures parses a -d value: a level, or a comma-separated list of
// feature names.
func ParseFeatures(s string) (Features, error) {
	bad := func() error {
		return cli.BadValue("detail", s, "expected a level from 0 to "+strconv.Itoa(MaxDetail)+
			" or a list of features ("+strings.Join(featureNames, ", ")+")")
	}
	if n, err := strconv.Atoi(s); err == nil {
		if n < 0 || n > MaxDetail {
			return 0, bad()
		}
		return FeaturesForLevel(n), nil
	}
	var f Features
	for _, name := range strings.Split(s, ",") {
		i := indexOf(featureNames, name)
		if i < 0 {
			return 0, bad()
		}
		if implemented&(1<<i) == 0 {
			return 0, cli.Usagef("feature '%s' of option '--detail' is not supported by godwarfs", name)
		}
		f |= 1 << i
	}
	return f, nil
}

func indexOf(list []string, s string) int {
	for i, n := range list {
		if n == s {
			return i
		}
	}
	return -1
}

// String lists the feature names, comma-separated.
func (f Features) String() string {
	var names []string
	for i, n := range featureNames {
		if f&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, ",")
}
