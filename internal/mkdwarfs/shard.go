package mkdwarfs

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/godwarfs/godwarfs/dedup"
	"github.com/godwarfs/godwarfs/internal/cli"
	"github.com/godwarfs/godwarfs/shard"
	"github.com/godwarfs/godwarfs/writer"
)

const shardHelp = `
Building in shards (on several machines, then merging):
  mkdwarfs -i DIR --shard=K/N [--shard-depth=D] -o shard-K.dwarfs
    builds shard K (from 0) of N. Every shard lists the whole tree and
    plans it the same way: the entries at depth D (default 1: the root's
    entries) are placed largest first into the shard with the fewest
    bytes; a directory larger than 1/N of the tree is split at the next
    level. A shard also holds the directories leading to its entries.
    The image's history records K, N and the plan's digest.
  mkdwarfs -i DIR --shard=N --shard-plan
    prints the plan as JSON (shards with their paths and bytes, and the
    digest) without building; --shard-digest=DIGEST makes a shard build
    fail unless the tree still plans to that digest.
  mkdwarfs --merge shard-*.dwarfs --merge-into-root -o OUT.dwarfs
    checks that the images are every shard of one plan, once each, and
    joins them into the whole tree.
`

// shardOptions takes --shard, --shard-depth, --shard-digest and
// --shard-plan.
func shardOptions(p *cli.Result, cfg *Config, recomp, grow bool) error {
	spec, ok := p.Lookup("shard")
	if !ok {
		for _, o := range []string{"shard-depth", "shard-digest", "shard-plan"} {
			if p.Has(o) {
				return usagef("--%s needs --shard", o)
			}
		}
		return nil
	}
	switch {
	case recomp:
		return usagef("--shard builds a shard of a tree; it cannot rewrite an image")
	case p.Has("merge"):
		return cli.Conflict("shard", "merge")
	case grow:
		return cli.Conflict("shard", "append")
	}
	so := &writer.ShardOptions{}
	var err error
	if !strings.Contains(spec, "/") && p.Has("shard-plan") {
		// The plan is of all shards: the count is enough.
		n, aerr := strconv.Atoi(spec)
		if aerr != nil || n < 1 {
			return cli.BadValue("shard", spec, "K/N, shard K (from 0) of N, or with --shard-plan N")
		}
		so.Count = n
	} else if so.Index, so.Count, err = shard.ParseSpec(spec); err != nil {
		return cli.BadValue("shard", spec, "K/N, shard K (from 0) of N")
	}
	if n, ok, err := p.Int("shard-depth", 1, 1<<16); err != nil {
		return err
	} else if ok {
		so.Depth = n
	}
	if d, ok := p.Lookup("shard-digest"); ok {
		if err := shard.CheckDigest(d); err != nil {
			return cli.BadValue("shard-digest", d, "sha256: and 64 lower-case hex digits, as --shard-plan prints it")
		}
		so.Digest = d
	}
	if cfg.OCIInput != "" {
		return usagef("--shard needs a directory or tar input, not a container image")
	}
	if p.Has("shard-plan") {
		cfg.ShardPlan = true
	} else if cfg.NoHistory {
		// The history entry is where the shard is recorded.
		return cli.Conflict("shard", "no-history")
	}
	cfg.Shard = so
	return nil
}

// printPlan lists the input as a build would and prints its plan as JSON.
func printPlan(ctx context.Context, cfg *Config, scan dedup.Options, stdout io.Writer) error {
	so := cfg.Shard
	list, err := dedup.List(ctx, scan)
	if err != nil {
		return err
	}
	p, err := shard.New(list, so.Count, max(so.Depth, 1))
	if err != nil {
		return err
	}
	if so.Digest != "" && p.Digest != so.Digest {
		return fmt.Errorf("the input's plan has the digest %s, not %s: the tree is not the one planned", p.Digest, so.Digest)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

// printShard says which part of the plan a shard build holds.
func printShard(w io.Writer, k int, p *shard.Plan) {
	s := p.Shards[k]
	fmt.Fprintf(w, "shard %d/%d of plan %s: %d paths, %d of %d bytes\n", k, p.Count, p.Digest, len(s.Paths), s.Bytes, p.Bytes)
}
