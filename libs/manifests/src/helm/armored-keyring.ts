/**
 * The binary OpenPGP packets of an ASCII-armored keyring (`gpg --armor --export`): what Helm's
 * `--keyring` reads, since it takes the legacy binary format only. Several armored blocks are
 * concatenated; anything outside them is ignored. Throws when no public key block is found.
 */
export function dearmorKeyring(armored: string): Uint8Array {
  const blocks = [
    ...armored.matchAll(
      /-----BEGIN PGP PUBLIC KEY BLOCK-----\r?\n([\s\S]*?)-----END PGP PUBLIC KEY BLOCK-----/g,
    ),
  ];
  if (blocks.length === 0) throw new Error('no "-----BEGIN PGP PUBLIC KEY BLOCK-----" in the keyring');
  const parts = blocks.map((b) => {
    // Armor headers (`Comment: …`) hold a colon, the CRC line (`=abcd`) starts with `=`; neither is data.
    const data = (b[1] ?? '')
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l !== '' && !l.includes(':') && !l.startsWith('='));
    return Buffer.from(data.join(''), 'base64');
  });
  return new Uint8Array(Buffer.concat(parts));
}
