/// @file pinned.hpp
/// @brief Internal (a base of the holders, not an API): objects that are
/// never copied or moved.
#pragma once

namespace pglease::detail {

/// A base for an object that a thread of its own, or a callback, keeps
/// the address of (the holders, their loop and callback threads): copying
/// or moving it would leave that thread with a dangling `this`. (A class
/// deriving from it that declares its destructor tells clang-tidy's
/// special-member-functions check that the copies and moves are deleted
/// here: NOLINT on its first line.)
class pinned {
public:
    pinned(const pinned&) = delete;
    pinned& operator=(const pinned&) = delete;
    pinned(pinned&&) = delete;
    pinned& operator=(pinned&&) = delete;

protected:
    pinned() = default;
    ~pinned() = default;
};

} // namespace pglease::detail
