#!/usr/bin/env bash
# git.sh: a repository built, changed, packed and checked by git with
# hakmem preloaded ends up identical (same commit ids) to one built with
# glibc.
. "$(dirname "$0")/lib.sh"
programs git
export GIT_AUTHOR_NAME=Test GIT_AUTHOR_EMAIL=test@example.com
export GIT_COMMITTER_NAME=Test GIT_COMMITTER_EMAIL=test@example.com
export GIT_AUTHOR_DATE='2024-01-01T00:00:00Z' GIT_COMMITTER_DATE='2024-01-01T00:00:00Z'
export GIT_CONFIG_NOSYSTEM=1

compare "git: init, commit, branch, merge, log, repack, fsck" bash -e -c '
git init -q -b main repo
cd repo
git config pack.threads 2
for i in $(seq 1 300); do
	mkdir -p "d$((i % 17))"
	seq 1 $((i * 13)) | sed "s/^/file $i line /" >"d$((i % 17))/f$i.txt"
done
git add -A
git commit -q -m "first"
git checkout -q -b topic
for i in $(seq 1 300 | awk "NR % 7 == 0"); do echo "change $i" >>"d$((i % 17))/f$i.txt"; done
git commit -q -am "topic change"
git checkout -q main
for i in $(seq 1 300 | awk "NR % 11 == 0"); do sed -i "1s/.*/edited $i/" "d$((i % 17))/f$i.txt"; done
git commit -q -am "main change"
git merge -q --no-edit topic
git log --stat --format="%H %s" | head -n 200
git repack -q -a -d -f --depth=50 --window=50
git fsck --full --strict 2>&1
git count-objects -v | grep -v -e size -e prune
git archive --format=tar HEAD | md5sum
git diff HEAD~2 HEAD --stat | tail -n 1
'

finish
