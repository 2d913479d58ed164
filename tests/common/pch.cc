// The translation unit that builds the test binaries' precompiled header (pch.h): an
// executable that does nothing, compiled with the test binaries' flags.
int main() { return 0; }
