# The compiler, standard library and C++ standard each libpqxx version
# needs here (Debian 12), sourced by scripts/libpqxx.sh and
# tests/platforms/build.sh so that the library and everything linked with
# it agree.
#
#   pqxx_toolchain VERSION   # sets PQXX_CC PQXX_CXX PQXX_STDLIB PQXX_STD PQXX_CXXFLAGS PQXX_LDFLAGS
pqxx_toolchain()
{
	case "$1" in
	6.* | 7.*)
		# GCC 12 and libstdc++, C++17: what Debian 13, Ubuntu 24.04 and
		# Fedora build 7.x with.
		PQXX_CC=gcc PQXX_CXX=g++ PQXX_STDLIB=libstdc++ PQXX_STD=17
		PQXX_CXXFLAGS="" PQXX_LDFLAGS=""
		;;
	8.*)
		# libpqxx 8 uses std::format, which GCC 12's libstdc++ lacks;
		# libc++ 16 has it behind -fexperimental-library.
		PQXX_CC=clang-16 PQXX_CXX=clang++-16 PQXX_STDLIB=libc++ PQXX_STD=20
		PQXX_CXXFLAGS="-stdlib=libc++ -fexperimental-library"
		PQXX_LDFLAGS="-stdlib=libc++ -fexperimental-library"
		;;
	*)
		echo "libpqxx-toolchain: no toolchain known for libpqxx $1" >&2
		return 1
		;;
	esac
}
