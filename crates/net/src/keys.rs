//! Key files, as WireGuard users know them: one base64 key per line.
//!
//! - a private key file holds this end's X25519 private key (written mode 0600);
//! - a public key file holds one public key; a list of accepted peers (the receiver's
//!   `--peers`, like SSH's `authorized_keys`) holds one per line, `#` starting a comment;
//! - a PSK file holds 32 random bytes, the same at both ends.

use crate::driver::os_random;
use crate::NetError;
use std::io::Write;
use std::path::Path;
use tributary_proto::handshake::{decode_key, encode_key, generate_keypair, public_key, Key};

fn read(path: &Path, what: &str) -> Result<String, NetError> {
    std::fs::read_to_string(path)
        .map_err(|e| NetError::Key(format!("cannot read {what} {}: {e}", path.display())))
}

/// Reads a file holding exactly one key.
pub fn read_key(path: &Path, what: &str) -> Result<Key, NetError> {
    let text = read(path, what)?;
    let lines: Vec<&str> = keys_in(&text).collect();
    match lines.as_slice() {
        [one] => decode_key(one).ok_or_else(|| {
            NetError::Key(format!(
                "{what} {} is not a key (44 characters of base64, as `tributary keygen` writes)",
                path.display()
            ))
        }),
        _ => Err(NetError::Key(format!(
            "{what} {} must hold exactly one key, found {}",
            path.display(),
            lines.len()
        ))),
    }
}

/// Reads this end's private key (`--key`). Refuses a file whose name ends in `.pub`, the
/// public half `tributary keygen` writes next to the private key: given by mistake, it would
/// be taken as a private key and every peer would fail to authenticate this end.
pub fn read_private_key(path: &Path) -> Result<Key, NetError> {
    if path.extension().is_some_and(|e| e == "pub") {
        let private = path.with_extension("");
        return Err(NetError::Key(format!(
            "{} is a public key file (`tributary keygen` writes the private key to {} and its \
             public half to FILE.pub): --key takes the private key",
            path.display(),
            private.display()
        )));
    }
    read_key(path, "private key")
}

/// Reads a peer's public key (`--peer-key`). Refuses a private key: the file `path.pub`
/// exists and holds the public half of the key in `path` (`tributary keygen`'s pair).
pub fn read_public_key(path: &Path, what: &str) -> Result<Key, NetError> {
    let key = read_key(path, what)?;
    let mut sibling = path.as_os_str().to_owned();
    sibling.push(".pub");
    let sibling = Path::new(&sibling);
    if sibling.is_file() && read_key(sibling, what).is_ok_and(|p| p == public_key(&key)) {
        return Err(NetError::Key(format!(
            "{what} {} is a private key (its public half is {}): give {} instead, and keep \
             the private key on its own machine",
            path.display(),
            sibling.display(),
            sibling.display()
        )));
    }
    Ok(key)
}

/// Reads a list of public keys (one per line, `#` comments).
pub fn read_key_list(path: &Path) -> Result<Vec<Key>, NetError> {
    let text = read(path, "peer list")?;
    keys_in(&text)
        .enumerate()
        .map(|(i, l)| {
            decode_key(l).ok_or_else(|| {
                NetError::Key(format!(
                    "peer list {}: entry {} is not a key",
                    path.display(),
                    i + 1
                ))
            })
        })
        .collect()
}

fn keys_in(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
}

/// Creates `path` with `text`, readable by its owner only; never overwrites.
fn create_secret(path: &Path, text: &str) -> Result<(), NetError> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o
        .open(path)
        .map_err(|e| NetError::Key(format!("cannot create {}: {e}", path.display())))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| NetError::Key(format!("cannot write {}: {e}", path.display())))
}

/// Writes a new key pair: the private key to `path`, the public key to `path.pub`. Refuses
/// to overwrite either. Returns the public key as text.
pub fn generate_key_pair(path: &Path) -> Result<String, NetError> {
    let pub_path = path.with_extension(match path.extension() {
        Some(e) => format!("{}.pub", e.to_string_lossy()),
        None => "pub".into(),
    });
    if pub_path.exists() {
        return Err(NetError::Key(format!(
            "{} exists; not overwriting it",
            pub_path.display()
        )));
    }
    let (private, public) = generate_keypair(os_random());
    create_secret(path, &format!("{}\n", encode_key(&private)))?;
    let p = encode_key(&public);
    std::fs::write(&pub_path, format!("{p}\n"))
        .map_err(|e| NetError::Key(format!("cannot write {}: {e}", pub_path.display())))?;
    Ok(p)
}

/// Writes a new pre-shared key to `path` (refuses to overwrite).
pub fn generate_psk(path: &Path) -> Result<(), NetError> {
    let k: Key = os_random();
    create_secret(path, &format!("{}\n", encode_key(&k)))
}

/// The public key of the private key in `path`, as text.
pub fn public_of(path: &Path) -> Result<String, NetError> {
    Ok(encode_key(&public_key(&read_key(path, "private key")?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_files_round_trip_and_are_never_overwritten() {
        let dir = std::env::temp_dir().join(format!("tributary-keys-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let k = dir.join("a.key");
        let public = generate_key_pair(&k).unwrap();
        assert_eq!(public_of(&k).unwrap(), public);
        let pubf = dir.join("a.key.pub");
        assert_eq!(encode_key(&read_key(&pubf, "public key").unwrap()), public);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&k).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        assert!(generate_key_pair(&k).is_err());
        let list = dir.join("peers");
        std::fs::write(
            &list,
            format!("# laptop\n{public}  # comment\n\n{public}\n"),
        )
        .unwrap();
        assert_eq!(read_key_list(&list).unwrap().len(), 2);
        std::fs::write(&list, "garbage\n").unwrap();
        assert!(read_key_list(&list)
            .unwrap_err()
            .to_string()
            .contains("entry 1"));
        // The halves swapped by mistake: each is refused with the file to give instead.
        let e = read_private_key(&pubf).unwrap_err().to_string();
        assert!(
            e.contains("is a public key file") && e.contains("a.key "),
            "{e}"
        );
        assert_eq!(
            read_private_key(&k).unwrap(),
            read_key(&k, "private key").unwrap()
        );
        let e = read_public_key(&k, "receiver public key")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("is a private key") && e.contains("a.key.pub"),
            "{e}"
        );
        assert_eq!(
            encode_key(&read_public_key(&pubf, "receiver public key").unwrap()),
            public
        );
        let e = read_key(&dir.join("missing"), "PSK file").unwrap_err();
        assert!(e.to_string().contains("cannot read PSK file"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
