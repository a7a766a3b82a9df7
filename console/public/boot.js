// Runs before the console's own files (a plain script in index.html's head; the page's policy allows no inline
// script). When one of them fails to load (the network dropped it: a laptop changing networks, a proxy restarted),
// the page is loaded once more after a moment; when the next load fails too, the page says what to do instead of
// staying blank. The console clears the mark once it has started (console/src/main.tsx).
(() => {
  const MARK = 'console-reloaded';
  const marked = () => {
    try {
      return sessionStorage.getItem(MARK) !== null;
    } catch {
      return true;
    }
  };
  const say = () => {
    const app = document.getElementById('app');
    if (!app || app.querySelector('[data-boot-failed]')) return;
    const note = document.createElement('p');
    note.setAttribute('role', 'alert');
    note.dataset.bootFailed = '';
    note.textContent =
      "The console's files did not load: the network dropped them. Check your connection, then reload the page.";
    app.replaceChildren(note);
  };
  const failed = (event) => {
    const el = event.target;
    const file = el instanceof HTMLScriptElement || (el instanceof HTMLLinkElement && el.rel !== 'icon');
    if (!file) return;
    if (marked()) {
      if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', say);
      else say();
      return;
    }
    sessionStorage.setItem(MARK, String(Date.now()));
    setTimeout(() => location.reload(), 250);
  };
  // Only the files the page loads to start: once it has loaded, a file the console fetches later (a chart's
  // code) is the console's own to handle, and a page in use is never loaded again under its user.
  window.addEventListener('error', failed, true);
  window.addEventListener('load', () => window.removeEventListener('error', failed, true));
})();
