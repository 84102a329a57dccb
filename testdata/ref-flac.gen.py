# Writes small PCM audio files (WAV, WAV extensible, AIFF) of several
# layouts into the current directory: tones plus a little deterministic
# noise, a few thousand samples each.
import math, struct

seed = 12345
def noise():
    global seed
    seed = (seed * 1103515245 + 12345) & 0x7fffffff
    return seed / 0x7fffffff - 0.5

def samples(bits, ch, rate, n):
    amp = (1 << (bits - 1)) - 1
    for i in range(n):
        for c in range(ch):
            v = 0.5 * math.sin(2 * math.pi * (220 + 110 * c) * i / rate) + 0.01 * noise()
            yield int(v * amp)

def ext80(rate):
    e = 16383 + int(math.floor(math.log2(rate)))
    m = int(rate * 2 ** (63 - (e - 16383)))
    return struct.pack('>HQ', e, m)

def wav(name, bits, container, ch, rate, n, unsigned=False):
    data = bytearray()
    for s in samples(bits, ch, rate, n):
        s <<= 8 * container - bits  # valid bits are the high ones
        if unsigned:
            s += 1 << (8 * container - 1)
        data += (s & ((1 << (8 * container)) - 1)).to_bytes(container, 'little')
    if bits != 8 * container or ch > 2:
        fmt = struct.pack('<HHIIHHHHI', 0xFFFE, ch, rate, rate * ch * container, ch * container,
                          8 * container, 22, bits, 0)
        fmt += bytes.fromhex('0100000000001000800000aa00389b71')  # PCM subformat
    else:
        fmt = struct.pack('<HHIIHH', 1, ch, rate, rate * ch * container, ch * container, 8 * container)
    body = b'WAVE' + b'fmt ' + struct.pack('<I', len(fmt)) + fmt + b'data' + struct.pack('<I', len(data)) + data
    open(name, 'wb').write(b'RIFF' + struct.pack('<I', len(body)) + body)

def aiff(name, bits, ch, rate, n):
    nb = (bits + 7) // 8
    data = bytearray()
    for s in samples(bits, ch, rate, n):
        data += ((s << (8 * nb - bits)) & ((1 << (8 * nb)) - 1)).to_bytes(nb, 'big')
    comm = struct.pack('>hIh', ch, n, bits) + ext80(rate)
    ssnd = struct.pack('>II', 0, 0) + data
    body = b'AIFF' + b'COMM' + struct.pack('>I', len(comm)) + comm + b'SSND' + struct.pack('>I', len(ssnd)) + ssnd
    open(name, 'wb').write(b'FORM' + struct.pack('>I', len(body)) + body)

wav('u8-mono-8k.wav', 8, 1, 1, 8000, 3000, unsigned=True)
wav('s16-stereo-44k.wav', 16, 2, 2, 44100, 2000)
wav('s16-6ch-48k.wav', 16, 2, 6, 48000, 600)
wav('s24-stereo-96k.wav', 24, 3, 2, 96000, 1000)
wav('s32-mono-48k.wav', 32, 4, 1, 48000, 1000)
wav('s20in24-stereo-48k.wav', 20, 3, 2, 48000, 1000)
wav('s12in16-mono-16k.wav', 12, 2, 1, 16000, 2000)
aiff('s16-stereo-22k.aiff', 16, 2, 22050, 1500)
aiff('s24-mono-32k.aiff', 24, 1, 32000, 1200)
aiff('s32-stereo-44k.aiff', 32, 2, 44100, 600)
aiff('s20-stereo-48k.aiff', 20, 2, 48000, 800)
