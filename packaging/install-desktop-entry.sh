#!/usr/bin/env bash
# Add a Bi3D Studio bundle to the desktop's application menu, for this user only:
#   ~/.local/share/applications/bi3d-studio.desktop   launcher running BUNDLE/bi3d-studio-gui
#   ~/.local/share/icons/hicolor/*/apps/bi3d-studio.*  icons (48, 128, 256 px and scalable)
#   ~/.local/bin/bi3d-studio                           link to the command line (unless one exists)
#
# Usage: install-desktop-entry.sh [BUNDLE_DIR]     (default: the folder this script is in,
#        install-desktop-entry.sh --uninstall       which is the bundle when run from inside it)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DATA="${XDG_DATA_HOME:-$HOME/.local/share}"
APPS="$DATA/applications"
ICONS="$DATA/icons/hicolor"
BIN="$HOME/.local/bin"
SIZES=(48 128 256)

refresh() {  # menus pick the change up without a new login where these tools exist
    command -v update-desktop-database >/dev/null && update-desktop-database -q "$APPS" || true
    command -v gtk-update-icon-cache >/dev/null && gtk-update-icon-cache -q -t "$ICONS" || true
}

if [[ "${1:-}" == --uninstall ]]; then
    rm -f "$APPS/bi3d-studio.desktop" "$ICONS/scalable/apps/bi3d-studio.svg"
    for size in "${SIZES[@]}"; do rm -f "$ICONS/${size}x${size}/apps/bi3d-studio.png"; done
    [[ -L "$BIN/bi3d-studio" ]] && rm -f "$BIN/bi3d-studio"
    refresh
    echo "removed the Bi3D Studio menu entry and icons"
    exit 0
fi

BUNDLE="$(cd "${1:-$HERE}" && pwd)"
GUI="$BUNDLE/bi3d-studio-gui"
CLI="$BUNDLE/bi3d-studio"
if [[ ! -x "$GUI" || ! -x "$CLI" ]]; then
    echo "$BUNDLE is not a Bi3D Studio bundle (no bi3d-studio-gui); give its folder: dist/bi3d-studio" >&2
    exit 2
fi
case "$BUNDLE" in
    *[\"\`\$\\%]*) echo "move the bundle to a path without \" \` \$ \\ or %: $BUNDLE" >&2; exit 2 ;;
esac
TEMPLATE="$HERE/bi3d-studio.desktop"
[[ -f "$TEMPLATE" ]] || TEMPLATE="$BUNDLE/bi3d-studio.desktop"
SOURCE_ICONS="$BUNDLE/_internal/app/resources/icons"

mkdir -p "$APPS" "$ICONS/scalable/apps" "$BIN"
for size in "${SIZES[@]}"; do
    install -D -m 644 "$SOURCE_ICONS/bi3d-studio-$size.png" "$ICONS/${size}x${size}/apps/bi3d-studio.png"
done
install -m 644 "$SOURCE_ICONS/bi3d-studio.svg" "$ICONS/scalable/apps/bi3d-studio.svg"

# the template runs `bi3d-studio gui` from PATH (a pip install); a bundle runs its own launcher,
# whose window class (for docks and task bars) is its file name
sed -e "s|^Exec=.*|Exec=\"$GUI\" %f|" \
    -e "s|^TryExec=.*|TryExec=$GUI|" \
    -e "s|^StartupWMClass=.*|StartupWMClass=$(basename "$GUI")|" \
    "$TEMPLATE" >"$APPS/bi3d-studio.desktop"
chmod 644 "$APPS/bi3d-studio.desktop"

if [[ ! -e "$BIN/bi3d-studio" || -L "$BIN/bi3d-studio" ]]; then
    ln -sfn "$CLI" "$BIN/bi3d-studio"
    echo "linked $BIN/bi3d-studio -> $CLI"
else
    echo "left $BIN/bi3d-studio alone (not a link; another install?)"
fi
refresh
echo "installed $APPS/bi3d-studio.desktop (runs $GUI) and icons under $ICONS"
