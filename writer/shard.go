package writer

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/godwarfs/godwarfs/shard"
)

// ShardOptions make Build build one shard of its input (see package
// shard): the scanned tree is planned into Count shards and only what
// shard Index holds is kept. The image's history entry records the shard
// (shard.Record), so a Merge can check that it has every shard of the
// plan once.
type ShardOptions struct {
	// Index is the shard built, counted from 0, of Count.
	Index, Count int
	// Depth is where the plan cuts the tree (0: 1, the root's entries).
	Depth int
	// Digest, if set, is the plan digest the build must come to (from a
	// plan made beforehand): a build that lists another tree fails before
	// its image is written.
	Digest string
}

// ErrShard is wrapped by the error of a merge of shard images that are
// not every shard of one plan, each once.
var ErrShard = errors.New("shards do not make up one plan")

// check validates the options of a build.
func (o *ShardOptions) check(h History) error {
	if o.Count < 1 || o.Index < 0 || o.Index >= o.Count {
		return fmt.Errorf("shard %d/%d: the index must be at least 0 and below the count: %w", o.Index, o.Count, ErrUsage)
	}
	if o.Depth < 0 {
		return fmt.Errorf("shard depth %d: %w", o.Depth, ErrUsage)
	}
	if o.Digest != "" {
		if err := shard.CheckDigest(o.Digest); err != nil {
			return fmt.Errorf("%w: %w", err, ErrUsage)
		}
	}
	if h.Omit {
		return fmt.Errorf("a shard's history entry records the shard; it cannot be left out: %w", ErrUsage)
	}
	return nil
}

func (o *ShardOptions) depth() int { return max(o.Depth, 1) }

// selector plans the scanned tree and keeps shard o.Index; the plan is
// stored in *plan.
func (o *ShardOptions) selector(plan **shard.Plan) func([]shard.Entry) (func(string) bool, error) {
	return func(list []shard.Entry) (func(string) bool, error) {
		p, err := shard.New(list, o.Count, o.depth())
		if err != nil {
			return nil, err
		}
		if o.Digest != "" && p.Digest != o.Digest {
			return nil, fmt.Errorf("the input's plan has the digest %s, not %s: the tree is not the one planned", p.Digest, o.Digest)
		}
		*plan = p
		return p.Keep(o.Index), nil
	}
}

// checkShards checks the inputs of a merge: if any is a shard, all must
// be the shards of one plan, each once. It returns the images in shard
// order, so that the merged image does not depend on the order the shards
// are given in, or b's order when none is a shard.
func checkShards(b *bases) ([]int, error) {
	order := make([]int, len(b.images))
	for i := range order {
		order[i] = i
	}
	recs := make([]shard.Record, len(b.images))
	isShard := make([]bool, len(b.images))
	anyShard := false
	for i, bi := range b.images {
		cmdlines := make([][]string, len(bi.history))
		for j, h := range bi.history {
			cmdlines[j] = h.Arguments
		}
		recs[i], isShard[i] = shard.FromHistory(cmdlines)
		anyShard = anyShard || isShard[i]
	}
	if !anyShard {
		return order, nil
	}
	// The plan is the one most inputs have (the first's on a tie).
	votes := map[string]int{}
	plan := ""
	for i := range b.images {
		if !isShard[i] {
			continue
		}
		votes[recs[i].Digest]++
		if plan == "" || votes[recs[i].Digest] > votes[plan] {
			plan = recs[i].Digest
		}
	}
	var count int
	var problems []string
	for i, bi := range b.images {
		switch {
		case !isShard[i]:
			problems = append(problems, fmt.Sprintf("%s is not a shard (its history does not end with a shard build)", bi.name))
		case recs[i].Digest != plan:
			problems = append(problems, fmt.Sprintf("%s is shard %s of another plan, %s", bi.name, recs[i].Spec(), recs[i].Digest))
		default:
			count = recs[i].Count
		}
	}
	seen := make([][]string, count)
	for i, bi := range b.images {
		if isShard[i] && recs[i].Digest == plan {
			if recs[i].Count != count {
				problems = append(problems, fmt.Sprintf("%s is shard %s, but another shard of the plan is one of %d", bi.name, recs[i].Spec(), count))
				continue
			}
			seen[recs[i].Index] = append(seen[recs[i].Index], bi.name)
		}
	}
	for k, names := range seen {
		switch {
		case len(names) == 0:
			problems = append(problems, fmt.Sprintf("shard %d/%d is missing", k, count))
		case len(names) > 1:
			problems = append(problems, fmt.Sprintf("shard %d/%d is given %d times: %s", k, count, len(names), strings.Join(names, ", ")))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("the plan %s of %d shards: %s: %w", plan, count, strings.Join(problems, "; "), ErrShard)
	}
	slices.SortStableFunc(order, func(i, j int) int { return recs[i].Index - recs[j].Index })
	b.shards = true
	return order, nil
}
