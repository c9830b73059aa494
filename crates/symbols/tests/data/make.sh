#!/bin/sh
# Regenerates the PE + PDB test fixtures from fixture.c.
#
# Needs clang, lld-link and llvm-pdbutil (Debian: apt-get install -y clang lld
# llvm). The tests themselves only read the committed outputs. The build runs
# in a scratch folder and records a fixed Windows-style build folder, so the
# outputs do not depend on where this script runs; /BREPRO makes the PE time
# stamp and PDB GUID a hash of the content, so a rebuild with the same clang
# gives the same bytes. After a rebuild, update the RVAs and the GUID in
# tests/fixture.rs from the dumps this script prints.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
build_dir='C:\nettrail\fixture'

cp "$here/fixture.c" "$scratch/"
cd "$scratch"

clang --target=x86_64-pc-windows-msvc -O2 -g -gcodeview \
    "-ffile-compilation-dir=$build_dir" \
    -c fixture.c -o fixture.obj

lld-link /DLL /NOLOGO /NODEFAULTLIB /ENTRY:fixture_entry \
    /DEBUG /BREPRO /PDBALTPATH:%_PDB% "/PDBSOURCEPATH:$build_dir" \
    /OUT:nettrail_fixture.dll /PDB:nettrail_fixture.pdb fixture.obj

cp nettrail_fixture.dll nettrail_fixture.pdb "$here/"

llvm-pdbutil dump -summary -publics -symbols -l -il "$here/nettrail_fixture.pdb"
