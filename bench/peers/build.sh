#!/usr/bin/env bash
# Builds the Go and Java peers of bench/peers into OUT, from Debian packages
# only and offline: etcd's own Go client and concurrency package
# (golang-etcd-server-dev), redigo, lib/pq, in GOPATH mode; Curator 5.4,
# ZooKeeper 3.8's client and the PostgreSQL JDBC driver from /usr/share/java.
# Everything it writes (GOPATH, Go's build cache, classes) stays under OUT.
#
#   bench/peers/build.sh OUT     # OUT/bin/etcdpeer, OUT/bin/redispeer, OUT/java/ZkPeer.class, OUT/classpath
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mkdir -p "$1" && cd "$1" && pwd)

mkdir -p "$out/gopath/src" "$out/bin" "$out/java"
ln -sfn "$here/go/src/peers" "$out/gopath/src/peers"
export GO111MODULE=off GOPATH="$out/gopath:/usr/share/gocode" GOCACHE="$out/gocache" GOFLAGS=
for p in etcdpeer redispeer; do
	go build -p 2 -o "$out/bin/$p" "peers/$p"
done

jars=(curator-framework curator-recipes curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple postgresql)
cp=
for j in "${jars[@]}"; do
	[ -f "/usr/share/java/$j.jar" ] || { echo "build.sh: /usr/share/java/$j.jar missing (scripts/deps.sh test)" >&2; exit 1; }
	cp="$cp:/usr/share/java/$j.jar"
done
javac -Xlint:all,-path -Werror -d "$out/java" -cp "${cp#:}" "$here/java/ZkPeer.java"
echo "$out/java$cp" >"$out/classpath"
