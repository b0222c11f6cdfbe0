"""PyTorch's CUDA caching allocator, replayed on a trace of allocations and frees.

What `torch.cuda.max_memory_reserved` shows after a sequence of tensor allocations is not
their sum: freed blocks stay cached (reserved) and are handed out again by best fit,
split when larger, so a long-lived small tensor placed inside a cached large block keeps
that block from serving the next large request, and a new segment is reserved. This
replays the rules of c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator, PyTorch
2.2-2.3 with the default PYTORCH_CUDA_ALLOC_CONF: no max_split_size, no
roundup_power2_divisions, no expandable segments, one stream, no empty_cache):

- round_size: every request is rounded up to a multiple of kMinBlockSize = 512 bytes;
- get_pool: requests <= kSmallSize (1 MiB) use the small pool, the rest the large pool;
- get_free_block: the smallest cached free block of the pool that is large enough, the
  lowest address among equal sizes (BlockComparatorSize orders by stream, size, ptr);
- get_allocation_size: with no such block a new segment is cudaMalloc'd: kSmallBuffer
  (2 MiB) for small requests, kLargeBuffer (20 MiB) for requests under kMinLargeAlloc
  (10 MiB), else the request rounded up to kRoundLarge (2 MiB);
- should_split: the block found is split when what remains is >= 512 bytes (small pool)
  or > kSmallSize (large pool); otherwise the whole block is handed out (and counted as
  allocated: the allocated_bytes stat counts block sizes);
- free_block: a freed block merges with its free neighbours in the same segment.

Pure: no torch, no GPU. Segments get increasing addresses in the order they are made.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

K_MIN_BLOCK_SIZE = 512
K_SMALL_SIZE = 1 << 20
K_SMALL_BUFFER = 2 << 20
K_LARGE_BUFFER = 20 << 20
K_MIN_LARGE_ALLOC = 10 << 20
K_ROUND_LARGE = 2 << 20


def round_size(size: int) -> int:
    if size < K_MIN_BLOCK_SIZE:
        return K_MIN_BLOCK_SIZE
    return K_MIN_BLOCK_SIZE * -(-size // K_MIN_BLOCK_SIZE)


def allocation_size(size: int) -> int:
    if size <= K_SMALL_SIZE:
        return K_SMALL_BUFFER
    if size < K_MIN_LARGE_ALLOC:
        return K_LARGE_BUFFER
    return K_ROUND_LARGE * -(-size // K_ROUND_LARGE)


@dataclass(eq=False, slots=True)
class _Block:
    ptr: int
    size: int
    small: bool
    allocated: bool = False
    prev: _Block | None = None
    next: _Block | None = None


@dataclass(slots=True)
class CachingAllocator:
    """Replays malloc/free; ``peak_allocated`` / ``peak_reserved`` are the allocator's
    allocated_bytes / reserved_bytes peaks (torch.cuda.max_memory_allocated / _reserved)."""

    allocated: int = 0
    reserved: int = 0
    peak_allocated: int = 0
    peak_reserved: int = 0
    _next_ptr: int = 0
    # free blocks per pool, sorted by (size, ptr)
    _free: dict[bool, list[tuple[int, int, _Block]]] = field(
        default_factory=lambda: {True: [], False: []})

    def _insert(self, b: _Block) -> None:
        bisect.insort(self._free[b.small], (b.size, b.ptr, b))

    def _remove(self, b: _Block) -> None:
        pool = self._free[b.small]
        i = bisect.bisect_left(pool, (b.size, b.ptr))
        assert pool[i][2] is b
        del pool[i]

    def malloc(self, nbytes: int) -> _Block:
        size = round_size(nbytes)
        small = size <= K_SMALL_SIZE
        pool = self._free[small]
        i = bisect.bisect_left(pool, (size, -1))
        if i < len(pool):
            block = pool.pop(i)[2]
        else:
            seg = allocation_size(size)
            block = _Block(self._next_ptr, seg, small)
            self._next_ptr += seg
            self.reserved += seg
            self.peak_reserved = max(self.peak_reserved, self.reserved)
        remaining = block.size - size
        if remaining >= K_MIN_BLOCK_SIZE if small else remaining > K_SMALL_SIZE:
            rest = _Block(block.ptr + size, remaining, small, prev=block, next=block.next)
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = size
            self._insert(rest)
        block.allocated = True
        self.allocated += block.size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        return block

    def free(self, block: _Block) -> None:
        assert block.allocated
        block.allocated = False
        self.allocated -= block.size
        for nb in (block.prev, block.next):
            if nb is not None and not nb.allocated:
                self._remove(nb)
                if nb is block.prev:
                    block.ptr = nb.ptr
                    block.prev = nb.prev
                    if nb.prev is not None:
                        nb.prev.next = block
                else:
                    block.next = nb.next
                    if nb.next is not None:
                        nb.next.prev = block
                block.size += nb.size
        self._insert(block)
