# A fake delegated agent for the runner's tests, run as
# /bin/bash fake-agent.sh ARGS... (never executed directly).
#   FAKE_DIR         where it writes its arguments (NUL-separated), its
#                    environment (env -0) and its working directory
#   FAKE_RECORD_DIR  when set, wait (bounded) for a delegation record there
#   FAKE_MODE        what to do (below); FAKE_STREAM a file to print
set -u
d=${FAKE_DIR:?}
printf '%s\0' "$@" > "$d/args"
env -0 > "$d/env"
pwd -P > "$d/cwd"
if [ -n "${FAKE_RECORD_DIR:-}" ]; then
	for _ in $(seq 1000); do
		ls "$FAKE_RECORD_DIR"/*.json >/dev/null 2>&1 && break
		sleep 0.01
	done
fi
started='{"type":"assistant","message":{"content":[{"type":"tool_use","name":"Bash","input":{"command":"started"}}]}}'
case "${FAKE_MODE:-stream}" in
stream)
	cat "$FAKE_STREAM"
	;;
fail)
	cat "$FAKE_STREAM"
	echo "${FAKE_ERR:-fatal error}" >&2
	exit "${FAKE_CODE:-1}"
	;;
silent-exit)
	exit 127
	;;
hang)
	echo "$started"
	sleep 300
	;;
hang-session)
	echo '{"type":"system","subtype":"init","session_id":"11111111-2222-4333-8444-555555555555"}'
	echo "$started"
	sleep 300
	;;
ignore-term)
	trap '' TERM
	echo "$started"
	sleep 300
	;;
setsid)
	setsid sleep 300 >/dev/null 2>&1 </dev/null &
	p=$!
	until [ "$(cat /proc/$p/comm 2>/dev/null)" = sleep ]; do sleep 0.01; done
	echo "$p" > "$d/child"
	echo "$started"
	sleep 300
	;;
flood)
	head -c 20000000 /dev/zero | tr '\0' 'e' >&2
	echo "flooded"
	;;
pi-session)
	# Like pi 0.73: --session names a session file, created when missing;
	# the stream's session header carries an id of pi's own. The reply
	# counts the turns the file held before this one.
	f=
	prev=
	for a in "$@"; do
		if [ "$prev" = --session ]; then f=$a; fi
		prev=$a
	done
	[ -n "$f" ] || { echo "no --session" >&2; exit 2; }
	mkdir -p "$(dirname "$f")"
	n=0
	[ -f "$f" ] && n=$(wc -l < "$f")
	echo '{"type":"turn"}' >> "$f"
	printf '{"type":"session","version":3,"id":"pi-own-%s-%s"}\n' "$$" "$RANDOM"
	printf '{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"%s earlier turns"}],"stopReason":"stop"}}\n' "$n"
	;;
claude-session)
	# Like Claude Code: --session-id starts a session with that id,
	# --resume continues one and fails when it does not exist.
	id=
	resume=
	prev=
	for a in "$@"; do
		case "$prev" in
		--session-id) id=$a ;;
		--resume) resume=$a ;;
		esac
		prev=$a
	done
	s="$d/claude-sessions"
	mkdir -p "$s"
	if [ -n "$resume" ]; then
		if [ ! -f "$s/$resume" ]; then
			echo "No conversation found with session ID: $resume" >&2
			exit 1
		fi
		id=$resume
	fi
	n=0
	[ -f "$s/$id" ] && n=$(wc -l < "$s/$id")
	echo turn >> "$s/$id"
	printf '{"type":"system","subtype":"init","session_id":"%s"}\n' "$id"
	printf '{"type":"result","subtype":"success","is_error":false,"result":"%s earlier turns","session_id":"%s"}\n' "$n" "$id"
	;;
codex-o)
	prev=
	for a in "$@"; do
		if [ "$prev" = -o ]; then printf 'final from the -o file\n' > "$a"; fi
		prev=$a
	done
	cat "$FAKE_STREAM"
	;;
esac
