import { render } from 'preact';
import { App } from './app';
import './style.css';

render(<App />, document.getElementById('app')!);
// The console started: a later failure to load its files may load the page once more (public/boot.js).
try {
  sessionStorage.removeItem('console-reloaded');
} catch {
  // storage refused (a private window's policy): boot.js then never loads the page again by itself
}
