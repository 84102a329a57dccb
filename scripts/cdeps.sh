#!/bin/sh
# The system encoders of a cgo build. liblzma and libFLAC encode lzma and
# flac when the build has the tags liblzma and libflac, which need their
# headers (Debian: liblzma-dev, libflac-dev); without them the pure-Go
# encoders are used. libzstd needs nothing: its Go module carries its C.
#
#   cdeps.sh tags     print the tags whose headers are installed, e.g. liblzma,libflac
#   cdeps.sh setup    install the missing headers as root where apt-get is;
#                     where that cannot be done, say in one line that lzma and
#                     flac get the pure-Go encoders (never fails)
#   cdeps.sh install  install the missing headers, or fail saying why
#
# GO names the go command (default go); its CC and CGO_ENABLED apply.
set -u
GO=${GO:-go}
cc=$($GO env CC 2>/dev/null) || cc=
cc=${cc:-cc}

# have HEADER DECL: the C compiler finds HEADER, and it declares what the
# encoder uses (an empty or foreign file of that name does not count).
have() { printf '#include <%s>\n%s\n' "$1" "$2" | $cc -x c -fsyntax-only - >/dev/null 2>&1; }
have_lzma() { have lzma.h 'lzma_stream s;'; }
have_flac() { have FLAC/stream_encoder.h 'FLAC__StreamEncoder *e;'; }

missing=
have_lzma || missing="$missing liblzma-dev"
have_flac || missing="$missing libflac-dev"

# install PKG...: apt-get, three tries (mirrors fail now and then).
install() {
	if [ "$(id -u)" != 0 ]; then
		why="not root"
		return 1
	fi
	if ! command -v apt-get >/dev/null 2>&1; then
		why="no apt-get"
		return 1
	fi
	echo "installing$missing for the system lzma and flac encoders" >&2
	for try in 1 2 3; do
		if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; then
			have_lzma && have_flac && return 0
			why="installed, but $cc still finds no headers"
			return 1
		fi
		[ "$try" = 3 ] || sleep 10
	done
	why="apt-get install failed"
	return 1
}

case ${1:-} in
tags)
	tags=
	have_lzma && tags=liblzma
	have_flac && tags=${tags:+$tags,}libflac
	echo "$tags"
	;;
setup)
	[ -n "$missing" ] || exit 0
	[ "$($GO env CGO_ENABLED 2>/dev/null)" = 1 ] || exit 0
	install $missing && exit 0
	echo "no$missing ($why): lzma and flac use the pure-Go encoders (make deps as root installs the system ones)" >&2
	;;
install)
	[ -n "$missing" ] || exit 0
	install $missing || { echo "could not install$missing: $why" >&2; exit 1; }
	;;
*)
	echo "usage: $0 tags|setup|install" >&2
	exit 2
	;;
esac
