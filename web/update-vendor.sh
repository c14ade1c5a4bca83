#!/bin/sh
# Vendors the web client's libraries from the npm registry into web/public/vendor: each package's tarball is
# checked against the integrity pinned below (npm's sha512), its ES module files are copied here
# with bare import specifiers rewritten to these relative files (the page has no import map: an
# inline one would break the no-inline-script policy) and source-map comments dropped, with each
# package's licence. Then web/vendor.sha256 is rewritten; a test (`steward-tests` `web_vendor`) checks
# the files against it. To upgrade, change a version and its integrity here and run this script.
set -eu
cd "$(dirname "$0")/public/vendor"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

fetch() { # name version integrity
    tarball="$work/$(echo "$1" | tr '/@' '__')-$2.tgz"
    curl -fsS --max-time 60 -o "$tarball" "https://registry.npmjs.org/$1/-/$(basename "$1")-$2.tgz"
    actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
    if [ "$actual" != "$3" ]; then
        echo "update.sh: $1@$2 does not match its pinned integrity ($actual)" >&2
        exit 1
    fi
    mkdir -p "$work/$1"
    tar xzf "$tarball" -C "$work/$1"
}

fetch preact 11.2.0 'sha512-/HfHI/7N84e6GrWBJ3J280z3mLaRJiDcSvj/A+y/4AbLnND/1UlGHe1sR6oYuTGwId0nP7dqDU9OnLxMPZ7xBg=='
fetch @preact/signals 2.11.4 'sha512-Rb+5RPo9gWSaHtzJeauhHxiC8KP/IF2DEPkHPEOGOnuy2wnJzRqyeLRankUCYd6ADqtxS6GnWGv6Ie343d8aYw=='
fetch @preact/signals-core 1.14.5 'sha512-vcRv7Ityz5JVmeiVqIluLFzT/PDS/AlhHUpw3/aUWqcVUs6bDGIPXE/6RSC4evBNWYvnniozg5Syfj33al3gkg=='
fetch htm 3.1.1 'sha512-983Vyg8NwUE7JkZ6NmOqpCZ+sh1bKv2iYTlUkzlWmA5JD2acKoxd4KVxbMmxX/85mtfdnDmTFoNKcg5DGAvxNQ=='

vendor() { # source target
    sed -e 's#from"preact"#from"./preact.mjs"#g' \
        -e 's#from"preact/hooks"#from"./hooks.mjs"#g' \
        -e 's#from"@preact/signals-core"#from"./signals-core.mjs"#g' \
        -e 's@//# sourceMappingURL=[^ ]*$@@' \
        "$1" > "$2"
}

vendor "$work/preact/package/dist/preact.mjs" preact.mjs
vendor "$work/preact/package/hooks/dist/hooks.mjs" hooks.mjs
vendor "$work/@preact/signals/package/dist/signals.mjs" signals.mjs
vendor "$work/@preact/signals-core/package/dist/signals-core.mjs" signals-core.mjs
vendor "$work/htm/package/dist/htm.mjs" htm.mjs
cp "$work/preact/package/LICENSE" LICENSE.preact
cp "$work/@preact/signals/package/LICENSE" LICENSE.signals
cp "$work/@preact/signals-core/package/LICENSE" LICENSE.signals-core
cp "$work/htm/package/LICENSE" LICENSE.htm
sha256sum ./*.mjs > ../../vendor.sha256
