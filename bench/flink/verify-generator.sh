#!/usr/bin/env bash
# Checks weir.bench.nexmark.NexmarkGenerator against Nexmark's own generator
# classes (docs/nexmark-flink-peer.md): takes nexmark-flink's generator and
# model sources from a git checkout of github.com/nexmark/nexmark at efed4d6^
# (the last java.util.Random version), adds the per-event seeding of its first
# version (558d931: the random seeded with each event's id), compiles them
# beside the peer and compares every event field by field.
#
# Usage: bench/flink/verify-generator.sh NEXMARK_CHECKOUT
# Needs the peer built by scripts/bench-nexmark (its jar and Flink's jars).
set -euo pipefail
nexmark=${1:?usage: verify-generator.sh NEXMARK_CHECKOUT (a git clone of github.com/nexmark/nexmark)}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${WEIR_BENCH_NEXMARK_DIR:-$repo/.cache/bench-nexmark}
jar=$cache/flink-build/target/weir-flink-bench-1.jar
lib=$(ls -d "$cache"/flink-lib-2.3.0-* 2>/dev/null | head -n 1)
[ -f "$jar" ] && [ -n "$lib" ] || { echo "verify-generator: build the peer first (scripts/bench-nexmark --smoke)" >&2; exit 3; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
rev=efed4d6^
p=nexmark-flink/src/main/java/com/github/nexmark/flink
for f in generator/GeneratorConfig generator/NexmarkGenerator generator/model/AuctionGenerator \
    generator/model/BidGenerator generator/model/LongGenerator generator/model/PersonGenerator \
    generator/model/PriceGenerator generator/model/StringsGenerator model/Event model/Person \
    model/Auction model/Bid NexmarkConfiguration utils/NexmarkUtils; do
  mkdir -p "$work/src/$(dirname "$f")"
  git -C "$nexmark" show "$rev:$p/$f.java" >"$work/src/$f.java"
done
# Flink 2 and the classpath: drop two imports that are unused or absent, and
# the Iterator<TimestampedValue> of the 1.x API; then the per-event seed.
python3 - "$work/src" <<'PY'
import glob, re, sys
for f in glob.glob(sys.argv[1] + '/**/*.java', recursive=True):
    s = open(f).read()
    s = s.replace('import javax.annotation.Nullable;\n', '').replace('@Nullable', '')
    s = s.replace('import org.apache.flink.table.utils.ThreadLocalCache;\n', '')
    if f.endswith('generator/NexmarkGenerator.java'):
        s = s.replace('import org.apache.flink.streaming.runtime.operators.windowing.TimestampedValue;\n', '')
        s = s.replace('Iterator<TimestampedValue<Event>>', 'Iterator<NexmarkGenerator.NextEvent>')
        s = re.sub(r'public TimestampedValue<Event> next\(\) \{.*?\n  \}',
                   'public NextEvent next() {\n    return nextEvent();\n  }', s, flags=re.S)
        assert 'long newEventId = getNextEventId();' in s
        s = s.replace('long newEventId = getNextEventId();',
                      'long newEventId = getNextEventId();\n    random.setSeed(newEventId);')
    open(f, 'w').write(s)
PY
cp "$here/verify/CheckAgainstNexmark.java" "$work/src/"
cp_="$jar:$lib/*"
mkdir -p "$work/out"
# shellcheck disable=SC2046
javac -nowarn -d "$work/out" -cp "$cp_" $(find "$work/src" -name '*.java') 2>&1 | grep -v '^Note:' || true
for args in "300000 10000000 1" "200000 10000000 2" "200000 1000 2" "100000 137 3" "50000 1 1"; do
  # shellcheck disable=SC2086
  java -cp "$work/out:$cp_" CheckAgainstNexmark $args
done
