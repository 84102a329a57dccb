package dwarfsck

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/godwarfs/godwarfs/internal/fixtures"
)

// TestDetail: -d takes a level (0 to 7) or feature names; each level shows
// more than the one below, as the reference does.
func TestDetail(t *testing.T) {
	img := fixtures.File(t, "reference", "images", "default.dwarfs")
	type want struct{ has, lacks []string }
	for _, tc := range []struct {
		d string
		want
	}{
		{"0", want{[]string{"created by: "}, []string{"DwarFS version", "History:", "block size:"}}},
		{"1", want{[]string{"DwarFS version 2.5", "created by: ", "block size: 16 MiB", "time resolution:"}, []string{"History:", "sections:"}}},
		{"2", want{[]string{"DwarFS version 2.5", "History:\n  1: libdwarfs v0.15.3", "block size:"}, []string{"sections:", "inodes:"}}},
		{"3", want{[]string{"History:", "sections:\n  0: BLOCK "}, []string{"inodes:"}}},
		{"4", want{[]string{"sections:", "inodes:\n", " a/hello.txt [inode "}, []string{"      block 0 offset"}}},
		{"5", want{[]string{"inodes:", "      block 0 offset"}, []string{"metadata:\n"}}},
		{"6", want{[]string{"      block 0 offset", "metadata:\n{"}, nil}},
		{"7", want{[]string{"metadata:\n{"}, nil}},
		{"version,history", want{[]string{"DwarFS version", "History:"}, []string{"block size:", "sections:"}}},
		{"section_details", want{[]string{"sections:\n  0: BLOCK "}, []string{"DwarFS version", "History:", "block size:"}}},
		{"metadata_summary,directory_tree", want{[]string{"block size:", "inodes:"}, []string{"DwarFS version", "History:"}}},
	} {
		rc, out, errs := runck("-d", tc.d, img)
		if rc != 0 {
			t.Errorf("-d %s: exit %d: %s", tc.d, rc, errs)
			continue
		}
		for _, s := range tc.has {
			if !strings.Contains(out, s) {
				t.Errorf("-d %s: output lacks %q:\n%s", tc.d, s, out)
			}
		}
		for _, s := range tc.lacks {
			if strings.Contains(out, s) {
				t.Errorf("-d %s: output has %q:\n%s", tc.d, s, out)
			}
		}
	}
	// -d1 and -d2 differ (the history), and -d2 is the default.
	_, d1, _ := runck("-d1", img)
	_, d2, _ := runck("-d2", img)
	_, def, _ := runck(img)
	if d1 == d2 || def != d2 {
		t.Errorf("-d1 == -d2 or the default is not -d2:\n-d1:\n%s\n-d2:\n%s", d1, d2)
	}
	for _, tc := range []struct{ d, msg string }{
		{"8", "invalid value '8' for option '--detail': expected a level from 0 to 7 or a list of features (version, history, "},
		{"-1", "invalid value '-1' for option '--detail': expected a level from 0 to 7"},
		{"bogus", "invalid value 'bogus' for option '--detail'"},
		{"version,bogus", "invalid value 'version,bogus' for option '--detail'"},
		{"frozen_layout", "feature 'frozen_layout' of option '--detail' is not supported by godwarfs"},
	} {
		rc, out, errs := runck("-d", tc.d, img)
		if rc != ExitImage || out != "" || !strings.HasPrefix(errs, "dwarfsck: error: "+tc.msg) {
			t.Errorf("-d %s: exit %d, stdout %q, stderr %q; want 1 and %q", tc.d, rc, out, errs, tc.msg)
		}
	}
}

func TestFeatureLevels(t *testing.T) {
	if len(levelAdds)-1 != MaxDetail || len(featureNames) != 12 {
		t.Fatalf("%d levels, %d features", len(levelAdds), len(featureNames))
	}
	if got := FeaturesForLevel(2).String(); got != "version,history,metadata_summary,frozen_analysis" {
		t.Errorf("level 2 = %s", got)
	}
	if FeaturesForLevel(MaxDetail) != 1<<len(featureNames)-1 {
		t.Errorf("level %d is not every feature: %s", MaxDetail, FeaturesForLevel(MaxDetail))
	}
}

func TestQuietVerbose(t *testing.T) {
	img := fixtures.File(t, "reference", "images", "default.dwarfs")
	if rc, out, errs := runck("-q", img); rc != 0 || out != "" || errs != "" {
		t.Errorf("-q: exit %d, stdout %q, stderr %q", rc, out, errs)
	}
	if rc, out, errs := runck("-q", "--check-integrity", img); rc != 0 || out != "" {
		t.Errorf("-q --check-integrity: exit %d, stdout %q, stderr %q", rc, out, errs)
	}
	// Quiet still fails (and says why) on a missing image.
	if rc, _, errs := runck("-q", img+".missing"); rc != ExitImage || !strings.Contains(errs, img+".missing") {
		t.Errorf("-q on a missing image: exit %d, stderr %q", rc, errs)
	}
	rc, out, errs := runck("-l", "-v", img)
	if rc != 0 {
		t.Fatalf("-l -v: exit %d: %s", rc, errs)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	entry := regexp.MustCompile(`^[-dlcbps][-rwxsStT]{9} +\d+/ *\d+ +\d+ \d{4}-\d\d-\d\d \d\d:\d\d (.*)$`)
	for _, l := range lines {
		if !entry.MatchString(l) {
			t.Errorf("-l -v line %q is not 'MODE UID/GID SIZE DATE TIME NAME'", l)
		}
	}
	// The root comes first, with an empty name; paths as in --list.
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "drwx") || !strings.HasSuffix(lines[0], " ") {
		t.Errorf("first line %q is not the root", lines[0])
	}
	for _, s := range []string{" a/hello.txt\n", " a/b/rel-link -> ../hello.txt\n", " a/abs-link -> /etc/passwd\n"} {
		if !strings.Contains(out, s) {
			t.Errorf("-l -v lacks %q", s)
		}
	}
	if !regexp.MustCompile(`(?m)^-rw------- +0/ *0 +6 \d{4}-\d\d-\d\d \d\d:\d\d a/hello.txt$`).MatchString(out) {
		t.Errorf("a/hello.txt line wrong:\n%s", out)
	}
	_, plain, _ := runck("-l", img)
	if len(strings.Split(strings.TrimSuffix(plain, "\n"), "\n")) != len(lines)-1 {
		t.Errorf("-l -v has %d lines, -l %d: want one more (the root)", len(lines), strings.Count(plain, "\n"))
	}
}

func TestModeString(t *testing.T) {
	for _, tc := range []struct {
		mode uint32
		want string
	}{
		{0o100644, "-rw-r--r--"}, {0o040755, "drwxr-xr-x"}, {0o120777, "lrwxrwxrwx"},
		{0o104755, "-rwsr-xr-x"}, {0o102644, "-rw-r-Sr--"}, {0o041777, "drwxrwxrwt"}, {0o041776, "drwxrwxrwT"},
		{0o020620, "crw--w----"}, {0o060660, "brw-rw----"}, {0o010644, "prw-r--r--"}, {0o140755, "srwxr-xr-x"},
	} {
		if got := modeString(tc.mode); got != tc.want {
			t.Errorf("modeString(%o) = %s, want %s", tc.mode, got, tc.want)
		}
	}
}

// TestChecksumAlgorithms checks every --checksum algorithm against the
// digest of the empty input (the fixture has an empty file).
func TestChecksumAlgorithms(t *testing.T) {
	img := fixtures.File(t, "reference", "images", "default.dwarfs")
	empty := map[string]string{
		"md5":        "d41d8cd98f00b204e9800998ecf8427e",
		"sha1":       "da39a3ee5e6b4b0d3255bfef95601890afd80709",
		"sha224":     "d14a028c2a3a2bc9476102bb288234c415a2b01f828ea62ac5b3e42f",
		"sha256":     "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"sha384":     "38b060a751ac96384cd9327eb1b1e36a21fdb71114be07434c0cc7bf63f6e1da274edebfe76f65fbd51ad2f14898b95b",
		"sha512":     "cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e",
		"sha512-224": "6ed0dd02806fa89e25de060c19d3ac86cabb87d6a0ddd05c333b84f4",
		"sha512-256": "c672b8d1ef56ed28ab87c3622c5114069bdd3ad7b8f9737498d0c01ecef0967a",
		"sha3-224":   "6b4e03423667dbb73b6e15454f0eb1abd4597f9a1b078e3f5b5a6bc7",
		"sha3-256":   "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a",
		"sha3-384":   "0c63a75b845e4f7d01107d852e4c2485c51a50aaaa94fc61995e71bbee983a2ac3713831264adb47fb6bd1e058d5f004",
		"sha3-512":   "a69f73cca23a9ac5c8b567dc185a756e97c982164fe25859e0d1dcc1475c80a615b2123af1f5f94c11e3e9402c3ac558f500199d95b6d3e301758586281dcd26",
		"blake2b512": "786a02f742015903c6c6fd852552d272912f4740e15847618a86e217f71f5419d25e1031afee585313896444934eb04b903a685b1448b755d56f701afe9be2ce",
		"blake2s256": "69217a3079908094e11121d042354a7c1f55b6482ca1a51e1b250dfd1ed0eef9",
		"ripemd160":  "9c1185a5c5e9fc54612808977ee8f548b2258d31",
		"md5-sha1":   "d41d8cd98f00b204e9800998ecf8427eda39a3ee5e6b4b0d3255bfef95601890afd80709",
		"xxh3-64":    "2d06800538d394c2",
		"xxh3-128":   "99aa06d3014798d86001c324468d497f",
	}
	if len(empty) != len(algoNames()) {
		t.Errorf("%d algorithms offered, %d tested", len(algoNames()), len(empty))
	}
	for algo, want := range empty {
		rc, out, errs := runck("--checksum="+algo, img)
		if rc != 0 || !strings.Contains(out, "\n"+want+"  a/empty\n") && !strings.HasPrefix(out, want+"  a/empty\n") {
			t.Errorf("%s: exit %d %s; want %s for a/empty in:\n%s", algo, rc, errs, want, out)
		}
	}
}

func TestCheckOptions(t *testing.T) {
	img := fixtures.File(t, "reference", "images", "default.dwarfs")
	for _, tc := range []struct {
		args []string
		rc   int
		msg  string
	}{
		{[]string{"-n", "3", "-s", "64m", "-q", img}, 0, ""},
		{[]string{"-n", "0", img}, 1, "invalid value '0' for option '--num-workers': expected a number from 1 to 1024"},
		{[]string{"-s", "lots", img}, 1, "invalid value 'lots' for option '--cache-size': expected a size such as 512m or 2g"},
		{[]string{"--log-level=debug", "-q", img}, 0, ""},
		{[]string{"--no-check", "--check-integrity", img}, 1, "options '--no-check' and '--check-integrity' cannot be used together"},
		{[]string{"-H", "-l", img}, 1, "options '--print-header' and '--list' cannot be used together"},
		{[]string{"-q", "-v", img}, 1, "options '--quiet' and '--verbose' cannot be used together"},
	} {
		rc, _, errs := runck(tc.args...)
		if rc != tc.rc || (tc.msg != "" && !strings.HasPrefix(errs, "dwarfsck: error: "+tc.msg+"\n")) || (tc.msg == "" && errs != "") {
			t.Errorf("%q: exit %d, stderr %q; want %d %q", tc.args, rc, errs, tc.rc, tc.msg)
		}
	}
}

// TestDetailJSON: --json shows what -d selects, as the reference does.
func TestDetailJSON(t *testing.T) {
	img := fixtures.File(t, "reference", "images", "default.dwarfs")
	keys := func(args ...string) string {
		rc, out, errs := runck(append(args, img)...)
		if rc != 0 {
			t.Fatalf("%q: exit %d: %s", args, rc, errs)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("%q: %v", args, err)
		}
		var k []string
		for key := range m {
			k = append(k, key)
		}
		sort.Strings(k)
		return strings.Join(k, " ")
	}
	for _, tc := range []struct {
		d, want string
	}{
		{"0", "created_by created_on features"},
		{"version", "created_by created_on features image_offset version"},
		{"history", "created_by created_on features history"},
	} {
		if got := keys("-j", "-d", tc.d); got != tc.want {
			t.Errorf("-j -d %s: keys %q, want %q", tc.d, got, tc.want)
		}
	}
	d1, d2 := keys("-j", "-d1"), keys("-j")
	if strings.Contains(d1, "history") || !strings.Contains(d1, "block_size") || !strings.Contains(d1, "version") || !strings.Contains(d2, "history") {
		t.Errorf("-j -d1 keys %q, -j keys %q", d1, d2)
	}
}
