# scripts/deps.sh — the Debian packages pipebench needs (sourced by scripts/test and
# scripts/demo); installs the missing ones when run as root.
PB_PACKAGES="meson ninja-build pkg-config gcc libc6-dev libdnnl-dev libsqlite3-dev check \
zlib1g-dev libzip-dev libturbojpeg0-dev libcjson-dev libicu-dev libinih-dev libgsl-dev gnuplot-nox dataset-fashion-mnist libopenmpi-dev openmpi-bin git \
clang libclang-rt-14-dev"

pb_install_deps() {
    local missing=""
    for p in $PB_PACKAGES; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
            || missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "pipebench: missing Debian packages:$missing" >&2
        echo "pipebench: install them with: sudo apt-get install$missing" >&2
        return 1
    fi
    echo "pipebench: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends $missing >/dev/null
}
