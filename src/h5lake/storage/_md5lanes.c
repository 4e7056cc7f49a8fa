/* MD5 of many buffers at once: eight lanes of AVX2, one buffer per lane.

MD5 (RFC 1321) is one long chain of dependent 32-bit operations, so one buffer cannot be hashed
faster than about 5 cycles a byte (OpenSSL's assembly is at that limit). Eight independent
buffers fill the eight 32-bit lanes of an AVX2 register and are hashed in the same instructions,
each lane the plain MD5 of its own buffer. ``digests(buffers)`` returns the 16-byte digests in
order, the same bytes ``hashlib.md5(b).digest()`` gives; the GIL is released while hashing.

Buffers are taken in groups of up to eight of similar length: the blocks all lanes have run in
step, and each lane's remaining blocks and its padding finish in plain C. Without AVX2 (another
CPU, or an x86 that lacks it) everything runs in plain C; the Python wrapper prefers OpenSSL
then (``lanes()`` returns 1).

Written from RFC 1321 for h5lake. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define H5L_X86 1
#include <immintrin.h>
#endif

static const uint32_t K[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
    0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
    0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
    0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
    0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
    0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
    0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391,
};

static const int S[64] = {
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
    5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
};

/* which message word step i adds */
static const int G[64] = {
    0, 1, 2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15,
    1, 6, 11, 0,  5,  10, 15, 4,  9,  14, 3,  8,  13, 2,  7,  12,
    5, 8, 11, 14, 1,  4,  7,  10, 13, 0,  3,  6,  9,  12, 15, 2,
    0, 7, 14, 5,  12, 3,  10, 1,  8,  15, 6,  13, 4,  11, 2,  9,
};

typedef struct {
    uint32_t s[4];
} md5_state;

static void md5_init(md5_state *st) {
    st->s[0] = 0x67452301;
    st->s[1] = 0xefcdab89;
    st->s[2] = 0x98badcfe;
    st->s[3] = 0x10325476;
}

static inline uint32_t load_le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint32_t rotl(uint32_t x, int s) { return (x << s) | (x >> (32 - s)); }

/* One 64-byte block into one state, plain C. */
static void md5_block(md5_state *st, const unsigned char *block) {
    uint32_t m[16];
    for (int i = 0; i < 16; i++) m[i] = load_le32(block + 4 * i);
    uint32_t a = st->s[0], b = st->s[1], c = st->s[2], d = st->s[3];
    for (int i = 0; i < 64; i++) {
        uint32_t f;
        if (i < 16) f = d ^ (b & (c ^ d));
        else if (i < 32) f = c ^ (d & (b ^ c));
        else if (i < 48) f = b ^ c ^ d;
        else f = c ^ (b | ~d);
        uint32_t t = d;
        d = c;
        c = b;
        b = b + rotl(a + f + K[i] + m[G[i]], S[i]);
        a = t;
    }
    st->s[0] += a;
    st->s[1] += b;
    st->s[2] += c;
    st->s[3] += d;
}

/* Blocks from ``start`` to the end of ``data`` (``length`` bytes in all), the padding, and
   the digest, continuing from ``st`` (which has hashed the first ``start`` bytes). */
static void md5_finish(md5_state *st, const unsigned char *data, size_t length, size_t start,
                       unsigned char out[16]) {
    size_t pos = start;
    while (length - pos >= 64) {
        md5_block(st, data + pos);
        pos += 64;
    }
    unsigned char tail[128];
    size_t rest = length - pos;
    memset(tail, 0, sizeof tail);
    if (rest) memcpy(tail, data + pos, rest);
    tail[rest] = 0x80;
    size_t padded = rest < 56 ? 64 : 128;
    uint64_t bits = (uint64_t)length * 8;
    for (int i = 0; i < 8; i++) tail[padded - 8 + i] = (unsigned char)(bits >> (8 * i));
    md5_block(st, tail);
    if (padded == 128) md5_block(st, tail + 64);
    for (int i = 0; i < 4; i++) {
        out[4 * i] = (unsigned char)st->s[i];
        out[4 * i + 1] = (unsigned char)(st->s[i] >> 8);
        out[4 * i + 2] = (unsigned char)(st->s[i] >> 16);
        out[4 * i + 3] = (unsigned char)(st->s[i] >> 24);
    }
}

#ifdef H5L_X86

#define LANES 16

__attribute__((target("avx2"))) static inline __m256i rotl8(__m256i x, int s) {
    return _mm256_or_si256(_mm256_slli_epi32(x, s), _mm256_srli_epi32(x, 32 - s));
}

/* Transpose eight rows of eight 32-bit words (row r = lane r) into eight lane vectors. */
__attribute__((target("avx2"))) static inline void transpose8(__m256i r[8]) {
    __m256i t0 = _mm256_unpacklo_epi32(r[0], r[1]), t1 = _mm256_unpackhi_epi32(r[0], r[1]);
    __m256i t2 = _mm256_unpacklo_epi32(r[2], r[3]), t3 = _mm256_unpackhi_epi32(r[2], r[3]);
    __m256i t4 = _mm256_unpacklo_epi32(r[4], r[5]), t5 = _mm256_unpackhi_epi32(r[4], r[5]);
    __m256i t6 = _mm256_unpacklo_epi32(r[6], r[7]), t7 = _mm256_unpackhi_epi32(r[6], r[7]);
    __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
    __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
    __m256i u4 = _mm256_unpacklo_epi64(t4, t6), u5 = _mm256_unpackhi_epi64(t4, t6);
    __m256i u6 = _mm256_unpacklo_epi64(t5, t7), u7 = _mm256_unpackhi_epi64(t5, t7);
    r[0] = _mm256_permute2x128_si256(u0, u4, 0x20);
    r[1] = _mm256_permute2x128_si256(u1, u5, 0x20);
    r[2] = _mm256_permute2x128_si256(u2, u6, 0x20);
    r[3] = _mm256_permute2x128_si256(u3, u7, 0x20);
    r[4] = _mm256_permute2x128_si256(u0, u4, 0x31);
    r[5] = _mm256_permute2x128_si256(u1, u5, 0x31);
    r[6] = _mm256_permute2x128_si256(u2, u6, 0x31);
    r[7] = _mm256_permute2x128_si256(u3, u7, 0x31);
}

/* One step of both halves (lanes 0-7 and 8-15): two independent chains, so one waits less
   on the other's results. */
#define STEP(FUN, a, b, c, d, i)                                                          \
    do {                                                                                  \
        __m256i f0_ = FUN(b##0, c##0, d##0);                                              \
        __m256i t0_ = _mm256_add_epi32(_mm256_add_epi32(a##0, f0_),                       \
                                       _mm256_add_epi32(m0[G[i]], k8[i]));                \
        a##0 = _mm256_add_epi32(b##0, rotl8(t0_, S[i]));                                  \
        if (two) {                                                                        \
            __m256i f1_ = FUN(b##1, c##1, d##1);                                          \
            __m256i t1_ = _mm256_add_epi32(_mm256_add_epi32(a##1, f1_),                   \
                                           _mm256_add_epi32(m1[G[i]], k8[i]));            \
            a##1 = _mm256_add_epi32(b##1, rotl8(t1_, S[i]));                              \
        }                                                                                 \
    } while (0)

#define F8(x, y, z) _mm256_xor_si256(z, _mm256_and_si256(x, _mm256_xor_si256(y, z)))
#define G8(x, y, z) _mm256_xor_si256(y, _mm256_and_si256(z, _mm256_xor_si256(x, y)))
#define H8(x, y, z) _mm256_xor_si256(_mm256_xor_si256(x, y), z)
#define I8(x, y, z) _mm256_xor_si256(y, _mm256_or_si256(x, _mm256_xor_si256(z, ones)))

static __m256i k8[64]; /* K[i] in every lane, filled at import */

__attribute__((target("avx2"))) static void load_words(__m256i m[16], const unsigned char *const *p, size_t off) {
    __m256i lo[8], hi[8];
    for (int j = 0; j < 8; j++) {
        lo[j] = _mm256_loadu_si256((const __m256i *)(p[j] + off));
        hi[j] = _mm256_loadu_si256((const __m256i *)(p[j] + off + 32));
    }
    transpose8(lo);
    transpose8(hi);
    for (int w = 0; w < 8; w++) {
        m[w] = lo[w];
        m[w + 8] = hi[w];
    }
}

/* ``blocks`` 64-byte blocks of each of eight buffers (sixteen when ``two``: two independent
   chains, so one waits less on the other's results), in step; ``st`` holds lane j's state as
   word j of each of four rows (A, B, C, D). */
__attribute__((target("avx2"), always_inline)) static inline void md5_kernel(
    uint32_t st[4][LANES], const unsigned char *p[LANES], size_t blocks, const int two) {
    __m256i A0 = _mm256_loadu_si256((const __m256i *)st[0]), A1 = _mm256_loadu_si256((const __m256i *)(st[0] + 8));
    __m256i B0 = _mm256_loadu_si256((const __m256i *)st[1]), B1 = _mm256_loadu_si256((const __m256i *)(st[1] + 8));
    __m256i C0 = _mm256_loadu_si256((const __m256i *)st[2]), C1 = _mm256_loadu_si256((const __m256i *)(st[2] + 8));
    __m256i D0 = _mm256_loadu_si256((const __m256i *)st[3]), D1 = _mm256_loadu_si256((const __m256i *)(st[3] + 8));
    const __m256i ones = _mm256_set1_epi32(-1);
    for (size_t n = 0; n < blocks; n++) {
        __m256i m0[16], m1[16];
        load_words(m0, p, n * 64);
        if (two) load_words(m1, p + 8, n * 64);
        __m256i a0 = A0, b0 = B0, c0 = C0, d0 = D0, a1 = A1, b1 = B1, c1 = C1, d1 = D1;
        for (int i = 0; i < 16; i += 4) {
            STEP(F8, a, b, c, d, i);
            STEP(F8, d, a, b, c, i + 1);
            STEP(F8, c, d, a, b, i + 2);
            STEP(F8, b, c, d, a, i + 3);
        }
        for (int i = 16; i < 32; i += 4) {
            STEP(G8, a, b, c, d, i);
            STEP(G8, d, a, b, c, i + 1);
            STEP(G8, c, d, a, b, i + 2);
            STEP(G8, b, c, d, a, i + 3);
        }
        for (int i = 32; i < 48; i += 4) {
            STEP(H8, a, b, c, d, i);
            STEP(H8, d, a, b, c, i + 1);
            STEP(H8, c, d, a, b, i + 2);
            STEP(H8, b, c, d, a, i + 3);
        }
        for (int i = 48; i < 64; i += 4) {
            STEP(I8, a, b, c, d, i);
            STEP(I8, d, a, b, c, i + 1);
            STEP(I8, c, d, a, b, i + 2);
            STEP(I8, b, c, d, a, i + 3);
        }
        A0 = _mm256_add_epi32(A0, a0), A1 = _mm256_add_epi32(A1, a1);
        B0 = _mm256_add_epi32(B0, b0), B1 = _mm256_add_epi32(B1, b1);
        C0 = _mm256_add_epi32(C0, c0), C1 = _mm256_add_epi32(C1, c1);
        D0 = _mm256_add_epi32(D0, d0), D1 = _mm256_add_epi32(D1, d1);
    }
    _mm256_storeu_si256((__m256i *)st[0], A0), _mm256_storeu_si256((__m256i *)(st[0] + 8), A1);
    _mm256_storeu_si256((__m256i *)st[1], B0), _mm256_storeu_si256((__m256i *)(st[1] + 8), B1);
    _mm256_storeu_si256((__m256i *)st[2], C0), _mm256_storeu_si256((__m256i *)(st[2] + 8), C1);
    _mm256_storeu_si256((__m256i *)st[3], D0), _mm256_storeu_si256((__m256i *)(st[3] + 8), D1);
}

__attribute__((target("avx2"))) static void md5_lanes8(uint32_t st[4][LANES], const unsigned char *p[LANES], size_t blocks) {
    md5_kernel(st, p, blocks, 0);
}

__attribute__((target("avx2"))) static void md5_lanes16(uint32_t st[4][LANES], const unsigned char *p[LANES], size_t blocks) {
    md5_kernel(st, p, blocks, 1);
}

__attribute__((target("avx2"))) static void fill_k8(void) {
    for (int i = 0; i < 64; i++) k8[i] = _mm256_set1_epi32((int)K[i]);
}

static int have_avx2(void) {
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2")) return 0;
    fill_k8();
    return 1;
}

#else
#define LANES 1
static int have_avx2(void) { return 0; }
#endif

typedef struct {
    const unsigned char *data;
    size_t length;
    size_t index; /* position in the caller's list */
} item;

static int by_length(const void *x, const void *y) {
    size_t a = ((const item *)x)->length, b = ((const item *)y)->length;
    return a < b ? -1 : a > b;
}

/* Digests of ``count`` items into ``out`` (16 bytes each, at each item's index). */
static void hash_all(item *items, size_t count, unsigned char *out, int wide) {
    size_t i = 0;
#ifdef H5L_X86
    if (wide && count > 1) {
        qsort(items, count, sizeof(item), by_length); /* similar lengths share a group */
        for (; i + 1 < count; i += LANES) {
            size_t group = count - i < LANES ? count - i : LANES;
            const unsigned char *p[LANES];
            uint32_t st[4][LANES];
            size_t common = items[i].length / 64; /* the shortest of the group: sorted */
            for (size_t j = 0; j < LANES; j++) {
                p[j] = items[i + (j < group ? j : 0)].data; /* spare lanes repeat the first */
                st[0][j] = 0x67452301;
                st[1][j] = 0xefcdab89;
                st[2][j] = 0x98badcfe;
                st[3][j] = 0x10325476;
            }
            if (common) (group > 8 ? md5_lanes16 : md5_lanes8)(st, p, common);
            for (size_t j = 0; j < group; j++) {
                md5_state s = {{st[0][j], st[1][j], st[2][j], st[3][j]}};
                item *it = &items[i + j];
                md5_finish(&s, it->data, it->length, common * 64, out + 16 * it->index);
            }
        }
    }
#endif
    for (; i < count; i++) {
        md5_state s;
        md5_init(&s);
        md5_finish(&s, items[i].data, items[i].length, 0, out + 16 * items[i].index);
    }
}

static int wide_ok = 0;

static PyObject *digests(PyObject *self, PyObject *arg) {
    (void)self;
    PyObject *seq = PySequence_Fast(arg, "digests() takes a sequence of buffers");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    Py_buffer *views = PyMem_Calloc(n ? (size_t)n : 1, sizeof(Py_buffer));
    item *items = PyMem_Calloc(n ? (size_t)n : 1, sizeof(item));
    unsigned char *out = PyMem_Malloc(n ? 16 * (size_t)n : 1);
    PyObject *result = NULL;
    Py_ssize_t got = 0;
    if (views == NULL || items == NULL || out == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < n; got++) {
        if (PyObject_GetBuffer(PySequence_Fast_GET_ITEM(seq, got), &views[got], PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        items[got].data = views[got].buf;
        items[got].length = (size_t)views[got].len;
        items[got].index = (size_t)got;
    }
    Py_BEGIN_ALLOW_THREADS
    hash_all(items, (size_t)n, out, wide_ok);
    Py_END_ALLOW_THREADS
    result = PyList_New(n);
    if (result == NULL) goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *d = PyBytes_FromStringAndSize((const char *)out + 16 * i, 16);
        if (d == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, i, d);
    }
done:
    for (Py_ssize_t i = 0; i < got; i++) PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free(items);
    PyMem_Free(out);
    Py_DECREF(seq);
    return result;
}

static PyObject *lanes(PyObject *self, PyObject *unused) {
    (void)self;
    (void)unused;
    return PyLong_FromLong(wide_ok ? LANES : 1);
}

static PyMethodDef methods[] = {
    {"digests", digests, METH_O, "MD5 digests (16 bytes each) of a sequence of buffers, in order."},
    {"lanes", lanes, METH_NOARGS, "Buffers hashed at once: 8 with AVX2, else 1."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_md5lanes", NULL, -1, methods};

PyMODINIT_FUNC PyInit__md5lanes(void) {
    wide_ok = have_avx2();
    return PyModule_Create(&module);
}
