#!/usr/bin/env bash
# Installs a built cronwheel (npm run build) as a systemd service: the binary, a system user,
# /etc/cronwheel/env (kept if present) and the unit, then enables and (re)starts it. Safe to re-run.
#   sudo scripts/install.sh [path/to/cronwheel]   (default: dist/cronwheel)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SRC_BIN="${1:-$ROOT/dist/cronwheel}"
UNIT_SRC="$ROOT/scripts/cronwheel.service"
BIN=/usr/local/bin/cronwheel
ETC=/etc/cronwheel
ENV_FILE="$ETC/env"
UNIT=/etc/systemd/system/cronwheel.service
USER_NAME=cronwheel

die() { echo "install.sh: $*" >&2; exit 1; }

[[ $EUID -eq 0 ]] || die "run as root (sudo $0)"
[[ -x "$SRC_BIN" ]] || die "$SRC_BIN not found or not executable; run 'npm run build' first"
[[ -f "$UNIT_SRC" ]] || die "$UNIT_SRC not found"
"$SRC_BIN" --help > /dev/null || die "$SRC_BIN does not run on this machine"

# Binary: copy next to the target, then rename, so a running service never sees a half-written file.
install -m 0755 -o root -g root "$SRC_BIN" "$BIN.new"
mv -f "$BIN.new" "$BIN"
echo "installed $BIN"

# System user without a login shell; its home is the state directory systemd creates.
if ! getent passwd "$USER_NAME" > /dev/null; then
  nologin="$(command -v nologin || echo /usr/sbin/nologin)"
  useradd --system --user-group --home-dir /var/lib/cronwheel --no-create-home --shell "$nologin" "$USER_NAME"
  echo "created user $USER_NAME"
fi

# Environment file: created once, never overwritten (it may hold the token and signing secret).
install -d -m 0750 -o root -g "$USER_NAME" "$ETC"
if [[ ! -e "$ENV_FILE" ]]; then
  (
    umask 027
    cat > "$ENV_FILE" <<'EOF'
# cronwheel settings, read by cronwheel.service (one CRONWHEEL_<FLAG>=value per line).
# See `cronwheel --help` for all flags. The database is set in the unit (--db file:/var/lib/cronwheel/cronwheel.db).
#CRONWHEEL_HOST=0.0.0.0
#CRONWHEEL_PORT=8080
#CRONWHEEL_ADVERTISE=http://this-host:8080
#CRONWHEEL_TOKEN=
#CRONWHEEL_SIGNING_SECRET=
#CRONWHEEL_LOG_LEVEL=info
EOF
  )
  chown root:"$USER_NAME" "$ENV_FILE"
  chmod 0640 "$ENV_FILE"
  echo "created $ENV_FILE"
fi

install -m 0644 -o root -g root "$UNIT_SRC" "$UNIT"
echo "installed $UNIT"

if [[ -d /run/systemd/system ]]; then
  systemctl daemon-reload
  systemctl enable cronwheel.service
  # restart: starts it if stopped, picks up a new binary or unit if running.
  systemctl restart cronwheel.service
  echo "cronwheel.service enabled and running; logs: journalctl -u cronwheel -f"
else
  echo "systemd is not running here: enable later with 'systemctl enable --now cronwheel.service'"
fi
